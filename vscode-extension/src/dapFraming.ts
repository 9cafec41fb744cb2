// Content-Length framing of DAP messages on a byte stream, for the server
// process the extension runs itself (so that it can show the server's stderr).

const HEADER_END = Buffer.from('\r\n\r\n', 'ascii');

export function encodeDapMessage(message: unknown): Buffer {
  const body = Buffer.from(JSON.stringify(message), 'utf8');
  return Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`, 'ascii'), body]);
}

/** Collects stream chunks and returns each complete message once its body has arrived. */
export class DapFrameReader {
  private buffer: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): unknown[] {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    const out: unknown[] = [];
    for (;;) {
      const end = this.buffer.indexOf(HEADER_END);
      if (end < 0) return out;
      const header = this.buffer.subarray(0, end).toString('ascii');
      const match = /Content-Length:\s*(\d+)/i.exec(header);
      if (match === null) {
        // not a header we understand: drop it and resynchronise on the next one
        this.buffer = this.buffer.subarray(end + HEADER_END.length);
        continue;
      }
      const length = Number(match[1]);
      const start = end + HEADER_END.length;
      if (this.buffer.length < start + length) return out;
      const body = this.buffer.subarray(start, start + length).toString('utf8');
      this.buffer = this.buffer.subarray(start + length);
      try {
        out.push(JSON.parse(body));
      } catch {
        // a broken body is skipped; the server reports its own problems
      }
    }
  }
}

/** The last lines of a process's stderr, short enough for a notification. */
export function stderrTail(text: string, maxLines = 6, maxChars = 600): string {
  const lines = text.trimEnd().split(/\r?\n/).filter((line) => line.trim() !== '');
  let tail = lines.slice(-maxLines).join('\n');
  if (tail.length > maxChars) tail = '…' + tail.slice(tail.length - maxChars);
  return tail;
}
