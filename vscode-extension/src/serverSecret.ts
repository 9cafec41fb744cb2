// The secret of an aspace-dap TCP server (`aspace-dap --port N`): the server makes one at
// each start, prints it and writes it to ~/.aspace-dap/port-N.secret (or its --secret-file),
// readable by its user only. A client presents it as the launch argument `secret`; on a
// shared machine every other user can reach 127.0.0.1, and the secret is what keeps them out.

import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

export type SecretResult = { ok: true; secret: string; file: string } | { ok: false; error: string };

/** Where `aspace-dap --port PORT` writes its secret unless told otherwise (--secret-file). */
export function defaultSecretFile(port: number, home: string = os.homedir()): string {
  return path.join(home, '.aspace-dap', `port-${port}.secret`);
}

/**
 * The secret of the server on `port`, read from `secretFile` (default: defaultSecretFile). The file
 * must be this user's and readable by nobody else, as the server writes it; anything else is refused
 * with a message that says what to do.
 */
export function readServerSecret(
  port: number,
  secretFile?: string,
  home?: string,
  uid: number | undefined = process.getuid?.(),
): SecretResult {
  const file = secretFile ?? defaultSecretFile(port, home);
  let info: fs.Stats;
  try {
    info = fs.statSync(file);
  } catch {
    return {
      ok: false,
      error:
        `no secret for the aspace-dap server on port ${port}: ${file} does not exist. Start the server with ` +
        `\`aspace-dap --port ${port}\` (it writes its secret there), or set "secret" (or "secretFile") in the configuration.`,
    };
  }
  if (!info.isFile()) return { ok: false, error: `${file} is not a file; it should hold the server's secret.` };
  if (uid !== undefined && info.uid !== uid) {
    return { ok: false, error: `${file} belongs to another user; the server's secret file is yours.` };
  }
  if ((info.mode & 0o077) !== 0) {
    return {
      ok: false,
      error: `${file} can be read by other users (mode ${(info.mode & 0o777).toString(8)}); the server writes it 600.`,
    };
  }
  const secret = fs.readFileSync(file, 'utf8').trim();
  if (secret === '') return { ok: false, error: `${file} is empty; restart the server to make a new secret.` };
  return { ok: true, secret, file };
}
