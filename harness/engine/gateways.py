"""What a sweep spread over other machines (--tx, pytest-xdist's execnet
gateways) moves between them: the work directory copied to a gateway's
machine at its own path (unless that machine sees it already) and
removed there at the end, and a case's directory packed there and
unpacked into --out here. The hooks that call these are the plugin's."""

import secrets
import shutil
from pathlib import Path

from . import results as resultsmod
from .outdir import remove_case_dir


# A file of the work directory holding a word drawn for this sweep: a
# gateway's machine that reads the same word at the same path sees the
# work directory already (sees_ours)
TOKEN = ".gateway-token"


def sees_ours(gateway, work):
    """Whether the machine of an execnet GATEWAY sees this sweep's
    work directory WORK at its path: the machine is this one, or shares
    the file system, or has a copy already. Copying the directory onto
    itself, and removing it at the end, would lose every result."""
    marker = Path(work) / TOKEN
    try:
        word = marker.read_text()
    except FileNotFoundError:
        word = secrets.token_hex(16)
        marker.write_text(word)
    ch = gateway.remote_exec(
        "path, word = channel.receive()\n"
        "try:\n"
        "    with open(path) as fh:\n"
        "        channel.send(fh.read() == word)\n"
        "except OSError:\n"
        "    channel.send(False)\n")
    ch.send((str(marker), word))
    return bool(ch.receive(60))


def check_gateway(spec, root):
    """Why the execnet gateway SPEC (xdist's --tx, without its count)
    cannot run a sweep's cases, in words, or "": it cannot be reached,
    or its worker would not run in the crashcheck tree at ROOT's path
    there (chdir=: the worker imports crashcheck from the directory it
    runs in, and a case's runs are aimed by the paths recorded here),
    or its Python lacks pytest or xdist (nothing is copied there:
    plugin.pytest_xdist_setupnodes).
    A gateway on this machine (popen) shares this process's tree."""
    import execnet
    if spec.startswith("popen"):
        return ""
    try:
        gw = execnet.makegateway(spec)
    except execnet.HostNotFound as e:
        # its text is the host alone; ssh said why on stderr
        return (f"cannot start a worker there: ssh to {e} failed, or the "
                f"Python it names did not start (ssh's own message is above)")
    except Exception as e:      # execnet's and ssh's errors, of every kind
        return f"cannot start a worker there: {str(e).strip() or type(e).__name__}"
    try:
        ch = gw.remote_exec(
            "import os\n"
            "here = os.getcwd()\n"
            "try:\n"
            "    import pytest, xdist\n"
            "    missing = ''\n"
            "except ImportError as e:\n"
            "    missing = e.name or str(e)\n"
            "channel.send((here, os.path.isfile(os.path.join(\n"
            "    here, 'harness', 'engine', 'plugin.py')), missing))\n")
        here, ok, missing = ch.receive(60)
    except Exception as e:
        return f"its worker does not answer: {str(e).strip() or type(e).__name__}"
    finally:
        gw.exit()
    if not ok:
        return (f"its worker runs in {here}, which is no crashcheck tree: "
                f"give //chdir= the tree there, at {root}")
    if here != str(root):
        return (f"its worker runs in the crashcheck tree at {here}: it must "
                f"be at {root}, as here")
    if missing:
        return (f"its Python cannot import {missing}: the worker runs the "
                f"pytest and pytest-xdist installed there (Debian: "
                f"python3-pytest-xdist)")
    return ""


def remove_copies(copies):
    """COPIES, (gateway, [directory]) that the plugin made on other
    machines (copy_to), removed while their gateways still stand; a
    gateway gone is its machine's to clean (its scratch)."""
    for gateway, dirs in copies:
        try:
            ch = gateway.remote_exec(
                "import shutil\n"
                "for d in channel.receive(): shutil.rmtree(d, ignore_errors=True)\n"
                "channel.send(True)")
            ch.send(dirs)
            ch.receive(30)
        except Exception:       # execnet's errors: the gateway is gone
            pass


def copy_to(gateway, path, dest=None):
    """PATH (a directory) onto the machine of an execnet GATEWAY, at DEST
    (default: the same path), with execnet's rsync, waiting for it."""
    import execnet
    # the rsync makes DEST and its parents itself (a makedirs of ours
    # beside it, in another of execnet's threads, raced its own and
    # failed it with FileExistsError)
    sync = execnet.RSync(str(path))
    sync.add_target(gateway, str(dest or path))
    sync.send()


def pack_case_dir(path):
    """A case directory as a gzipped tar, base64 text (what an execnet
    channel carries), removed here once packed: a remote worker's."""
    import base64
    import io
    import tarfile
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(path, arcname=path.name)
    shutil.rmtree(path, ignore_errors=True)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def unpack_case_dir(text, cases):
    """pack_case_dir's TEXT into CASES (the controller's --out/cases/),
    replacing crashcheck's own directory of that name (outdir), never
    writing outside it: its one top directory, no absolute names, no
    '..', nothing under a link it holds, no devices. The directory's
    name, or None when refused."""
    import base64
    import io
    import tarfile
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(text)),
                      mode="r:gz") as tar:
        members = tar.getmembers()
        tops = {m.name.split("/", 1)[0] for m in members}
        links = {m.name for m in members if m.issym() or m.islnk()}
        if len(tops) != 1:
            return None
        top, = tops
        for m in members:
            parts = m.name.split("/")
            if m.name.startswith("/") or ".." in parts or top != resultsmod.safe_name(top) \
                    or not (m.isfile() or m.isdir() or m.issym()) \
                    or any("/".join(parts[:i]) in links
                           for i in range(1, len(parts))):
                return None
        cases.mkdir(parents=True, exist_ok=True)
        if cases.is_symlink():
            return None
        if (cases / top).exists() and not remove_case_dir(cases / top):
            return None
        tar.extractall(cases, members=members)
    return top
