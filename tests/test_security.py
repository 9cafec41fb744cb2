"""The path policy against a hostile client, over the real servers (stdio, TCP, the owner-only socket).

A client that is not known to be the user (TCP without a secret, `--insecure-tcp`) may only read
what the user opened (the dump, the launch's code object, the working directory); a client that is
the user (stdio, the owner-only socket, TCP with the secret) reads what the debug info and its
sourceMap name, as gdb does, and still only files the debug info names. Every client may only write
inside the save folder it names, and cannot tell a missing path from an unreadable one.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from aspace_dap.paths import PathPolicy, PathRefused, save_target
from aspace_dap.state.writer import StateWriter
from dap_client import NOBODY, connect_tcp, launch_answer, server_copy, start_server_subprocess, \
    start_tcp_server_subprocess

ROOT = Path(__file__).resolve().parents[1]
DUMP = ROOT / "examples" / "lds_tiles" / "dumps" / "gfx90a.O0"
TIMEOUT = 20  # seconds for any one answer: a safety net, not a measurement
# Two headers the example's DWARF names (Debian's libstdc++ as hipcc used it)
NAMED_HEADER = "/usr/include/c++/12/bits/exception_ptr.h"
OTHER_HEADER = "/usr/include/c++/12/bits/std_abs.h"


@pytest.fixture(scope="module")
def tcp_port():
    """One TCP server for the module: its clients are separate sessions."""
    process, _, port = start_tcp_server_subprocess(["-m", "aspace_dap", "--port", "0"])
    yield port
    process.kill()
    process.wait()


@pytest.fixture(scope="module")
def insecure_tcp_port():
    """A TCP server without a secret (--insecure-tcp): anyone on the machine may be its client."""
    process, _, port = start_tcp_server_subprocess(["-m", "aspace_dap", "--port", "0", "--insecure-tcp"])
    yield port
    process.kill()
    process.wait()


@pytest.fixture(scope="module")
def socket_path():
    """A server on an owner-only Unix-domain socket."""
    from test_listeners import start_socket_server

    folder = Path(tempfile.mkdtemp(prefix="aspace-socket-"))
    path = folder / "aspace.sock"
    process = start_socket_server(path)
    yield path
    process.kill()
    process.wait()
    shutil.rmtree(folder, ignore_errors=True)


def _clients(request, kind: str):
    """A function returning a new initialized client of a real server of `kind`, closed after the test."""
    clients = []

    def new_client():
        if kind == "stdio":
            client = start_server_subprocess(["-m", "aspace_dap"])
        elif kind == "tcp":
            client = connect_tcp(request.getfixturevalue("tcp_port"))
        elif kind == "socket":
            from test_listeners import connect_unix
            client = connect_unix(request.getfixturevalue("socket_path"))
        else:
            client = connect_tcp(request.getfixturevalue("insecure_tcp_port"), secret=None)
        clients.append(client)
        client.request("initialize", {"adapterID": "aspace-gpu"}, timeout=TIMEOUT)
        return client

    return clients, new_client


def _close(clients) -> None:
    for client in clients:
        try:
            client.close()
        except (AssertionError, OSError):
            pass


@pytest.fixture
def connect_not_user(request):
    """Clients of a server that does not know who they are (--insecure-tcp)."""
    clients, new_client = _clients(request, "insecure-tcp")
    yield new_client
    _close(clients)


@pytest.fixture(params=["stdio", "tcp", "socket"])
def connect_user(request):
    """Clients that are the user: the editor's stdio, TCP with the secret, the owner-only socket."""
    clients, new_client = _clients(request, request.param)
    yield new_client
    _close(clients)


@pytest.fixture(params=["stdio", "tcp"])
def connect(request):
    """A function returning a new initialized client of a real server over the parametrized transport."""
    clients, new_client = _clients(request, request.param)
    yield new_client
    _close(clients)


def launch(client, **arguments):
    return launch_answer(client, TIMEOUT, **arguments)


def assert_refused(response, *secrets: str):
    assert not response["success"], response
    text = json.dumps(response)
    assert "internal error" not in text and "Traceback" not in text, text
    for secret in secrets:
        assert secret not in text


# ---- `source` reads only what the debug info names, where the path policy allows ----
# A client that is not the user reads only what the user opened; one that is the user reads anywhere.

def test_a_source_map_cannot_turn_a_named_file_into_any_file(connect_not_user):
    client = connect_not_user()
    answer = launch(client, state=str(DUMP), sourceMap={NAMED_HEADER: "/etc/passwd",
                                                         OTHER_HEADER: "/proc/self/environ"})
    assert answer["success"], answer
    passwd = Path("/etc/passwd").read_text()
    for path in ("/etc/passwd", "/proc/self/environ"):
        response = client.request_raw("source", {"source": {"path": path}}, timeout=TIMEOUT)
        assert_refused(response, passwd.splitlines()[0], "PATH=")
    # what the debug info names, mapped folder by folder, still opens
    kernel = next(s for s in client.request("loadedSources", timeout=TIMEOUT)["sources"]
                  if s["name"] == "lds_tiles.hip")
    assert "__shared__" in client.request("source", {"source": kernel}, timeout=TIMEOUT)["content"]


def test_a_folder_map_reads_only_what_was_opened(connect_not_user, tmp_path):
    """A sourceMap only says where to look: for a client that is not the user, the mapped file is read when
    it lies inside what the user opened (here the dump's folder), never because the map points somewhere."""
    connect = connect_not_user
    dump = tmp_path / "dump"
    shutil.copytree(DUMP, dump)
    (dump / "include").mkdir()
    (dump / "include" / "exception_ptr.h").write_text("// mapped copy\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "exception_ptr.h").write_text("// not opened\n")
    (tmp_path / "secret.txt").write_text("not for clients\n")
    client = connect()
    assert launch(client, state=str(dump), sourceMap={"/usr/include/c++/12/bits": str(dump / "include")})["success"]
    mapped = str(dump / "include" / "exception_ptr.h")
    assert client.request("source", {"source": {"path": mapped}}, timeout=TIMEOUT)["content"] == "// mapped copy\n"
    response = client.request_raw("source", {"source": {"path": str(tmp_path / "secret.txt")}}, timeout=TIMEOUT)
    assert_refused(response, "not for clients")
    other = connect()
    assert launch(other, state=str(dump), sourceMap={"/usr/include/c++/12/bits": str(outside)},
                  workspaceFolder=str(outside))["success"]  # nor does a workspace folder the client names
    response = other.request_raw("source", {"source": {"path": str(outside / "exception_ptr.h")}}, timeout=TIMEOUT)
    assert_refused(response, "not opened")


def code_object_naming(path: str) -> bytes:
    """A small gfx90a code object (benchmarks/gen_big_code_object.py) whose line table names `path`."""
    from test_codeobj_generated import load_generator

    stem = "s" * 200
    image, _, _ = load_generator().write_code_object(20, 1, stem)
    old = (stem + "_00000.hip").encode()
    assert len(path.encode()) < len(old) and old in image
    return image.replace(old, path.encode().ljust(len(old), b"\0"))


def test_a_code_object_the_client_wrote_does_not_open_the_files_it_names(connect_not_user, tmp_path):
    """writeMemory puts a code object naming a secret into the dump's memory, saveDump writes it as a
    file, a new launch names that file as its code object: for a client that is not the user, the secret
    is still not a source."""
    connect = connect_not_user
    secret = tmp_path / "private" / "notes.txt"
    secret.parent.mkdir()
    secret.write_text("not for clients\n")
    dump = tmp_path / "dump"
    shutil.copytree(DUMP, dump)
    manifest = json.loads((dump / "manifest.json").read_text())
    (dump / "mem" / "scratchpad.bin").write_bytes(bytes(16 << 10))
    manifest["memory"].append({"space": "global", "address": "0x7f0001000000", "size": 16 << 10,
                               "file": "mem/scratchpad.bin", "file_offset": 0})
    (dump / "manifest.json").write_text(json.dumps(manifest))
    client = connect()
    assert launch(client, state=str(dump))["success"]
    for named in (str(secret), "/etc/passwd"):
        image = code_object_naming(named)
        client.request("writeMemory", {"memoryReference": "global#0x7f0001000000",
                                       "data": base64.b64encode(image).decode()}, timeout=TIMEOUT)
        saved = Path(client.request("saveDump", {"path": str(tmp_path / f"saved-{len(named)}")}, timeout=60)["path"])
        written = next(p for p in (saved / "mem").iterdir() if p.read_bytes().startswith(b"\x7fELF"))
        other = connect()
        assert launch(other, state=str(saved), codeObject=str(written))["success"]
        names = [s["path"] for s in other.request("loadedSources", timeout=TIMEOUT)["sources"]]
        assert named not in names  # not found where this client may look: no path is given for it
        response = other.request_raw("source", {"source": {"path": named}}, timeout=TIMEOUT)
        assert_refused(response, "not for clients", "root:")
        assert "not a source file" not in response["message"], response  # the code object does name it


def test_a_symlink_in_the_dump_does_not_lead_a_source_out_of_it(connect_not_user, tmp_path):
    """The debug info names examples/lds_tiles/lds_tiles.hip; the dump's code/lds_tiles.hip (nearest
    to the code object, so looked at first) is a link to /etc/passwd: for a client that is not the user,
    it is passed over."""
    connect = connect_not_user
    dump = tmp_path / "dump"
    shutil.copytree(DUMP, dump)
    link = dump / "code" / "lds_tiles.hip"
    link.symlink_to("/etc/passwd")
    first_line = Path("/etc/passwd").read_text().splitlines()[0]
    client = connect()
    assert launch(client, state=str(dump))["success"]
    kernel = next(s for s in client.request("loadedSources", timeout=TIMEOUT)["sources"]
                  if s["name"] == "lds_tiles.hip")
    assert kernel["path"] != str(link)
    content = client.request("source", {"source": kernel}, timeout=TIMEOUT)["content"]
    assert "__shared__" in content and first_line not in content
    assert_refused(client.request_raw("source", {"source": {"path": str(link)}}, timeout=TIMEOUT), first_line)


def test_a_client_that_is_the_user_reads_what_the_debug_info_names_anywhere(connect_user, tmp_path):
    """The editor's client (stdio), TCP with the secret and the owner-only socket are the user: a sourceMap
    to any folder is read, as gdb's substitute-path is; what the debug info does not name is still no source."""
    outside = tmp_path / "elsewhere" / "bits"
    outside.mkdir(parents=True)
    (outside / "exception_ptr.h").write_text("// the user's copy\n")
    (tmp_path / "notes.txt").write_text("the user's notes\n")
    client = connect_user()
    assert launch(client, state=str(DUMP), sourceMap={"/usr/include/c++/12/bits": str(outside)})["success"]
    mapped = str(outside / "exception_ptr.h")
    assert mapped in [s["path"] for s in client.request("loadedSources", timeout=TIMEOUT)["sources"]]
    assert client.request("source", {"source": {"path": mapped}}, timeout=TIMEOUT)["content"] == "// the user's copy\n"
    response = client.request_raw("source", {"source": {"path": str(tmp_path / "notes.txt")}}, timeout=TIMEOUT)
    assert_refused(response, "the user's notes")
    assert "not a source file of the loaded code objects" in response["message"], response


# ---- a save writes only inside its folder, with names the writer makes ----

def escaping_dump(tmp_path: Path) -> Path:
    dump = tmp_path / "dump"
    shutil.copytree(DUMP, dump)
    manifest = json.loads((dump / "manifest.json").read_text())
    manifest["memory"][-1]["space"] = "../../ESCAPE"
    (dump / "manifest.json").write_text(json.dumps(manifest))
    return dump


def test_a_space_name_cannot_lead_a_save_out_of_its_folder(connect, tmp_path):
    dump = escaping_dump(tmp_path)
    client = connect()
    answer = launch(client, state=str(dump))
    if answer["success"]:
        client.request_raw("saveDump", {"path": str(tmp_path / "saved")}, timeout=TIMEOUT)
    else:
        assert "not a plain name" in answer["message"]
    assert not list(tmp_path.glob("ESCAPE*")), "the save wrote outside its folder"
    outside = {p for p in tmp_path.rglob("*") if not p.is_relative_to(dump) and not p.is_relative_to(tmp_path / "saved")}
    assert outside <= {tmp_path / "saved"}


def test_the_validator_refuses_names_that_are_not_plain(tmp_path):
    dump = escaping_dump(tmp_path)
    result = subprocess.run([sys.executable, "-m", "aspace_dap", "state", "validate", str(dump)],
                            capture_output=True, text=True, cwd=ROOT, timeout=TIMEOUT)
    assert result.returncode != 0
    assert "memory[3].space" in result.stdout + result.stderr


def test_the_writer_makes_every_file_name(tmp_path):
    writer = StateWriter("amd", "gfx90a", 64)
    writer.add_memory("../../ESCAPE", 0x1000, b"\1" * 16)
    writer.add_code_object(b"\x7fELF", name="../../evil.co")
    writer.add_register_layout("l", [("pc", 8)])
    writer.add_dispatch("k", 0, (64, 1, 1), (64, 1, 1)).add_workgroup((0, 0, 0)).add_wave(0, 0, b"\0" * 8, "l")
    writer.write(tmp_path / "out")
    assert not list(tmp_path.glob("*ESCAPE*")) and not list(tmp_path.glob("evil*"))
    names = sorted(str(p.relative_to(tmp_path / "out")) for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert names == ["code/code-object-0.co", "manifest.json", "mem/region-0.bin", "regs/wave-0.bin"]


# ---- saveDump to places that are not for files, and ill-formed paths ----

@pytest.mark.parametrize("target", ["/proc/aspace-save", "/sys/aspace-save", "/tmp/a\0b", "/tmp/" + "n" * 100_000])
def test_save_to_a_kernel_interface_or_an_impossible_name_is_a_clear_error(connect, target):
    client = connect()
    assert launch(client, state=str(DUMP))["success"]
    response = client.request_raw("saveDump", {"path": target}, timeout=TIMEOUT)
    assert_refused(response)
    if target.startswith(("/proc", "/sys")):
        assert not os.path.lexists(target)


def test_a_lone_surrogate_in_a_path_is_a_clear_error(connect, tmp_path):
    """JSON's "\\ud800" is a string no file name can hold: refused by name (it was a UnicodeEncodeError),
    for saveDump, the REPL's save and launch alike."""
    client = connect()
    assert launch(client, state=str(DUMP))["success"]
    target = str(tmp_path / "saved-\ud800")
    for command, arguments in (("saveDump", {"path": target}),
                               ("evaluate", {"expression": f"save {target}", "context": "repl"})):
        response = client.request_raw(command, arguments, timeout=TIMEOUT)
        assert_refused(response)
        assert "surrogate" in response["message"], response
    assert client.request("evaluate", {"expression": "2+3"}, timeout=TIMEOUT)["result"] == "5"
    other = connect()
    other.request_raw("configurationDone", timeout=TIMEOUT)
    for arguments in ({"state": target}, {"state": str(DUMP), "codeObject": target}):
        response = other.request_raw("launch", arguments, timeout=TIMEOUT)
        assert_refused(response)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("length", [230, 231, 240, 255])
def test_saves_to_names_up_to_the_longest_a_file_system_allows(connect, tmp_path, length):
    """A name of 231 to 255 bytes is a valid name, yet `.NAME.aspace-partial-XXXXXXXX` beside it would be
    over 255: the hidden partial folder takes a shortened name, and the save works."""
    name = ("é" * length)[: length // 2] + "n" * (length - 2 * (length // 2))  # two bytes a character
    assert len(name.encode()) == length
    client = connect()
    assert launch(client, state=str(DUMP))["success"]
    saved = client.request("saveDump", {"path": str(tmp_path / name)}, timeout=60)["path"]
    assert Path(saved) == tmp_path / name and (tmp_path / name / "manifest.json").is_file()
    assert [p.name for p in tmp_path.iterdir()] == [name]


def test_a_name_over_the_longest_a_file_system_allows_is_refused_by_name(connect, tmp_path):
    client = connect()
    assert launch(client, state=str(DUMP))["success"]
    response = client.request_raw("saveDump", {"path": str(tmp_path / ("n" * 256))}, timeout=TIMEOUT)
    assert_refused(response)
    assert "longer than 255 bytes" in response["message"], response
    assert list(tmp_path.iterdir()) == []


def test_a_register_declared_a_terabyte_long_is_a_clear_error(connect, tmp_path):
    """A layout may end in a register longer than its file (the rest unknown): one declared 2^40 bytes
    long was a MemoryError when saved; it is refused by name, and the session goes on."""
    dump = tmp_path / "dump"
    shutil.copytree(DUMP, dump)
    manifest = json.loads((dump / "manifest.json").read_text())
    for layout in manifest["register_layouts"].values():
        layout.append(["huge", 1 << 40])
    (dump / "manifest.json").write_text(json.dumps(manifest))
    client = connect()
    answer = launch(client, state=str(dump))
    if not answer["success"]:
        assert_refused(answer)
        assert "huge" in answer["message"], answer
        return
    thread = client.request("threads", timeout=TIMEOUT)["threads"][0]["id"]
    frame = client.request("stackTrace", {"threadId": thread}, timeout=TIMEOUT)["stackFrames"][0]["id"]
    scopes = {s["name"]: s for s in client.request("scopes", {"frameId": frame}, timeout=TIMEOUT)["scopes"]}
    response = client.request_raw("variables", {"variablesReference": scopes["Registers"]["variablesReference"]},
                                  timeout=TIMEOUT)
    text = json.dumps(response)
    assert "internal error" not in text and "Traceback" not in text, text
    response = client.request_raw("saveDump", {"path": str(tmp_path / "saved")}, timeout=60)
    assert_refused(response)
    assert "huge" in response["message"] and "bytes" in response["message"], response
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dump"]
    assert client.request("evaluate", {"expression": "2+3"}, timeout=TIMEOUT)["result"] == "5"


@pytest.fixture
def save_places():
    """Folders a server may not write to, and one it may, in a fresh world-readable folder.

    Root may write in every folder, so then the server runs as uid 65534 (`nobody`)."""
    base = Path(tempfile.mkdtemp(prefix="aspace-save-places-"))
    base.chmod(0o755)
    locked, sealed, open_ = base / "locked", base / "sealed", base / "open"
    for folder in (locked / "full", locked / "empty", sealed / "inside", open_ / "full"):
        folder.mkdir(parents=True)
    (locked / "full" / "manifest.json").write_text("{}")
    (open_ / "full" / "manifest.json").write_text("{}")
    (locked / "file").write_text("a file\n")
    (locked / "to-proc").symlink_to("/proc/self")
    locked.chmod(0o555)
    (locked / "full").chmod(0o555)
    sealed.chmod(0o700 if os.geteuid() == 0 else 0o000)
    open_.chmod(0o777)
    (open_ / "full").chmod(0o777)
    launcher, python, env, dump = [], sys.executable, None, DUMP
    runtime = Path(tempfile.mkdtemp(prefix="aspace-server-copy-"))
    try:
        if os.geteuid() == 0:
            if not shutil.which("setpriv"):
                pytest.skip("running as root without setpriv: every folder is writable")
            launcher = list(NOBODY)
            # nobody may not read this checkout (a clone in /root, or in any 0700 folder): the server and the
            # dump it opens run from copies nobody can read
            python, env = server_copy(launcher, str(runtime))
            dump = runtime / "dump"
            shutil.copytree(DUMP, dump)
            for folder in [dump, *(p for p in dump.rglob("*") if p.is_dir())]:
                folder.chmod(0o755)
        yield base, (lambda: start_server_subprocess(["-m", "aspace_dap"], launcher, python, env)), dump
    finally:
        for folder in (locked, locked / "full", sealed):
            folder.chmod(0o755)
        shutil.rmtree(base)
        shutil.rmtree(runtime)


def start_server_subprocess_checked(start_server):
    """An initialized client of the server `start_server` starts; what it said on stderr if it could not
    answer (an import error, say), instead of only that it closed the stream."""
    client = start_server()
    try:
        client.request("initialize", {"adapterID": "aspace-gpu"}, timeout=TIMEOUT)
    except AssertionError as exc:
        client.process.wait(TIMEOUT)
        raise AssertionError(f"{exc}; the server said: {client.stderr.text[-2000:]}") from None
    return client


def test_save_refusals_where_the_server_cannot_write_do_not_tell_what_is_there(save_places):
    base, start_server, dump = save_places
    names = ["locked/full", "locked/empty", "locked/file", "locked/missing", "locked/missing/deeper",
             "locked/file/below", "locked/full/below", "locked/to-proc/x", "sealed/inside", "sealed/nothing",
             "sealed/inside/x"]
    listing = sorted(str(p) for p in base.rglob("*") if "sealed" not in str(p))
    client = start_server_subprocess_checked(start_server)
    try:
        assert launch(client, state=str(dump))["success"]
        messages = {}
        for name in names:
            response = client.request_raw("saveDump", {"path": str(base / name)}, timeout=TIMEOUT)
            assert_refused(response)
            messages[name] = response["message"].replace(str(base / name), "PATH")
        assert len(set(messages.values())) == 1, messages
        assert "can write" in messages["locked/full"]  # still says what a save needs
        # where it can write, what is in the way is no secret: the client could save there to find out
        response = client.request_raw("saveDump", {"path": str(base / "open" / "full")}, timeout=TIMEOUT)
        assert_refused(response)
        assert "exists and is not an empty folder" in response["message"]
        saved = client.request("saveDump", {"path": str(base / "open" / "new" / "dump")}, timeout=60)["path"]
        assert (Path(saved) / "manifest.json").is_file()
    finally:
        client.close()
    assert sorted(str(p) for p in base.rglob("*") if "sealed" not in str(p) and "open/new" not in str(p)) == listing


def test_kernel_interfaces_are_never_save_targets_or_source_roots(tmp_path):
    for target in ("/dev/aspace-save", "/proc/self/x", "/sys/kernel/x", "/dev/shm/../x"):
        with pytest.raises(PathRefused):
            save_target(target)
    policy = PathPolicy()
    policy.allow_read_root("/proc/self")
    policy.allow_read_root("/")
    assert not policy.allows("/proc/self/environ") and not policy.allows("/etc/passwd")
    (tmp_path / "link").symlink_to("/etc")
    policy.allow_read_root(tmp_path)
    assert not policy.allows(tmp_path / "link" / "passwd")  # a symlink cannot lead out of a root
    user = PathPolicy(client_is_user=True)  # reads what the user can, kernel interfaces aside
    assert user.allows("/etc/passwd") and user.allows(tmp_path / "link" / "passwd")
    assert not user.allows("/proc/self/environ") and not user.may_look("/proc/self/environ")
    (tmp_path / "environ").symlink_to("/proc/self/environ")
    assert not user.allows(tmp_path / "environ")  # nor through a symlink


def test_kernel_files_are_never_read_however_regular_they_look(tmp_path):
    """/proc/kmsg is a regular file whose read blocks, or takes the kernel's messages from whoever
    else reads them; /proc/self/status stands in for it here (a harmless read, were it made)."""
    from aspace_dap.paths import open_regular, read_regular

    (tmp_path / "status").symlink_to("/proc/self/status")
    for path in ("/proc/self/status", tmp_path / "status", "/sys/kernel/mm/transparent_hugepage/enabled"):
        with pytest.raises(PathRefused, match="nothing readable of that kind there"):
            read_regular(path, "code object", 1 << 20, "MAX_CODE_OBJECT_BYTES")
    if os.path.isdir("/dev/shm"):  # tmpfs, not a kernel interface: dumps may live there
        with tempfile.NamedTemporaryFile(dir="/dev/shm") as shm:
            os.close(open_regular(shm.name, "the dump")[0])


def test_source_map_values_must_be_strings(connect):
    client = connect()
    answer = launch(client, state=str(DUMP), sourceMap={"/usr": 5})
    assert_refused(answer)
    assert "sourceMap" in answer["message"]


# ---- missing, unreadable and special paths read the same ----

def test_launch_errors_do_not_tell_which_paths_exist(connect, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    plain = tmp_path / "notes.txt"
    plain.write_text("hello\n")
    folder = tmp_path / "folder"
    folder.mkdir()
    listening = tmp_path / "sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(listening))
    missing = tmp_path / "missing"
    client = connect()
    client.request_raw("configurationDone", timeout=TIMEOUT)  # from now on launch answers at once

    def message(path: Path, **arguments) -> str:
        answer = client.request_raw("launch", arguments, timeout=TIMEOUT)
        assert_refused(answer)
        return answer["message"].replace(str(path), "PATH")

    try:
        expected = message(missing, state=str(missing))
        for path in (fifo, plain, folder, listening, Path("/dev/zero"), Path("/proc/self/environ")):
            assert message(path, state=str(path)) == expected
        expected = message(missing, state=str(DUMP), codeObject=str(missing))
        for path in (fifo, plain, folder, Path("/dev/zero")):
            assert message(path, state=str(DUMP), codeObject=str(path)) == expected
    finally:
        server.close()
