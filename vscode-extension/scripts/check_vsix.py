"""Checks a packaged .vsix: the manifest it carries, the files it ships, and
that the bundle needs nothing at run time beyond VS Code and Node built-ins."""

import json
import re
import sys
import zipfile

NODE_BUILTINS = {
    "assert", "buffer", "child_process", "crypto", "events", "fs", "net", "os",
    "path", "stream", "string_decoder", "url", "util", "zlib",
}
REQUIRED = {"extension/package.json", "extension/dist/extension.js", "extension/LICENSE.txt", "extension/readme.md",
            "extension/images/icon.png"}
FORBIDDEN_PREFIXES = ("extension/node_modules/", "extension/src/", "extension/test/", "extension/out/")


def check(vsix_path: str, manifest_path: str) -> list[str]:
    problems: list[str] = []
    with zipfile.ZipFile(vsix_path) as vsix:
        names = set(vsix.namelist())
        lowered = {n.lower(): n for n in names}
        for required in REQUIRED:
            if required.lower() not in lowered:
                problems.append(f"missing {required}")
        for name in sorted(names):
            if name.startswith(FORBIDDEN_PREFIXES):
                problems.append(f"should not ship {name}")
        shipped = json.loads(vsix.read("extension/package.json"))
        bundle = vsix.read("extension/dist/extension.js").decode("utf-8")
    with open(manifest_path, encoding="utf-8") as f:
        source = json.load(f)
    for key in ("name", "publisher", "version", "main", "contributes", "activationEvents", "engines", "icon", "repository",
                "license", "categories"):
        if shipped.get(key) != source.get(key):
            problems.append(f"package.json field {key!r} differs from the source manifest")
    # what the Marketplace and Open VSX ask of a published extension
    for key in ("publisher", "license", "icon", "categories", "repository", "description", "displayName"):
        if not source.get(key):
            problems.append(f"package.json has no {key!r}, which a marketplace listing needs")
    if source.get("icon") and f"extension/{source['icon']}".lower() not in lowered:
        problems.append(f"the icon {source['icon']} is not shipped")
    for module in sorted(set(re.findall(r"""require\(["']([^"']+)["']\)""", bundle))):
        bare = module.removeprefix("node:")
        if module != "vscode" and bare not in NODE_BUILTINS:
            problems.append(f"bundle requires {module!r}, which is not shipped")
    return problems


def main() -> int:
    vsix_path, manifest_path = sys.argv[1], sys.argv[2]
    problems = check(vsix_path, manifest_path)
    for p in problems:
        print(f"{vsix_path}: {p}", file=sys.stderr)
    if not problems:
        print(f"{vsix_path}: ok")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
