"""Writes never destroy what is at the path (issue 27 §1): a regular file is replaced atomically,
a character device or a FIFO is written through (never replaced by a regular file), a symlink is
followed and its target written, anything else is refused in one line; every output path is
checked before the work."""

from __future__ import annotations

import os
import socket
import stat
import threading
import time
from pathlib import Path

import pytest

from rooflens.cli import main
from rooflens.hardware.errors import RooflensError
from rooflens.io.files import atomic_write_text, check_writable, read_input_text

PLAN = ["plan", "--model", "llama-3-8b", "--gpus", "h100-sxm", "--tp", "1", "--rate", "1",
        "--sim-requests", "0", "--json"]  # fmt: skip
SERVE = ["validate", "serve", str(Path(__file__).parents[1] / "validate" / "serve_data" /
         "vllm_simulated.json"), "--model", "llama-3-8b", "--gpu", "h100-sxm"]  # fmt: skip


def fake_null(folder: Path) -> Path:
    """A copy of /dev/null's device node (the issue's harmless reproduction); needs root."""
    node = folder / "fakenull"
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("mknod of a character device needs root")
    return node


def test_a_device_is_written_through_not_replaced(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    node = fake_null(tmp_path)
    assert main([*PLAN, "--csv", str(node)]) == 0
    capsys.readouterr()
    assert stat.S_ISCHR(node.stat().st_mode)  # still the device, not a 300 kB regular file
    assert not list(tmp_path.glob(".fakenull*"))  # no temp file left beside it


def test_a_symlink_is_followed_and_kept(tmp_path: Path) -> None:
    target = tmp_path / "real.txt"
    target.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    atomic_write_text(link, "new")
    assert link.is_symlink() and target.read_text() == "new"
    node = fake_null(tmp_path)
    to_device = tmp_path / "to-device"
    to_device.symlink_to(node)
    atomic_write_text(to_device, "x" * 1000)
    assert to_device.is_symlink() and stat.S_ISCHR(node.stat().st_mode)


def test_a_fifo_gets_the_bytes(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    atomic_write_text(fifo, "through the pipe\n")
    reader.join(timeout=5)
    assert got == ["through the pipe\n"] and stat.S_ISFIFO(fifo.stat().st_mode)


def test_dash_is_standard_output(capsys) -> None:  # type: ignore[no-untyped-def]
    atomic_write_text("-", "to stdout\n")
    assert capsys.readouterr().out == "to stdout\n"


def test_a_regular_file_is_replaced_atomically(tmp_path: Path) -> None:
    path = tmp_path / "out.csv"
    path.write_text("old")
    atomic_write_text(path, "new")
    assert path.read_text() == "new" and oct(path.stat().st_mode & 0o777) == "0o644"


@pytest.mark.parametrize("kind", ["socket", "dangling", "empty", "folder"])
def test_anything_else_is_refused_in_one_line(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "x"
    if kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
    elif kind == "dangling":
        path.symlink_to(tmp_path / "nowhere")
    elif kind == "folder":
        path.mkdir()
    target = "" if kind == "empty" else str(path)
    for call in (lambda: check_writable(target, "--csv"), lambda: atomic_write_text(target, "")):
        with pytest.raises(RooflensError) as err:
            call()
        assert "\n" not in str(err.value)
    if kind == "socket":
        assert stat.S_ISSOCK(path.stat().st_mode)  # untouched


def test_a_full_device_is_one_line(capsys) -> None:  # type: ignore[no-untyped-def]
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    assert main([*PLAN, "--csv", "/dev/full"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "/dev/full" in err and ".tmp" not in err


@pytest.mark.parametrize("out", ["/proc/x.yaml", ""])
def test_serve_fit_out_is_checked_before_the_fit(capsys, out: str) -> None:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    assert main([*SERVE, "--fit", "--out", out]) == 2
    assert time.perf_counter() - start < 1.5  # the fit takes a minute or more
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--out" in err and "busy" not in err


def test_serve_out_without_fit_is_refused(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main([*SERVE, "--out", "p.yaml"]) == 2
    assert "--fit" in capsys.readouterr().err


@pytest.mark.parametrize("out", ["/proc/x.csv", ""])
def test_e2e_output_is_checked_before_the_run(capsys, out: str) -> None:  # type: ignore[no-untyped-def]
    assert main(["validate", "e2e", "--model", "llama-3-8b", "--device", "cpu", "-o", out]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "-o" in err and ".tmp" not in err


def test_reading_a_bom_a_folder_and_a_pipe(tmp_path: Path) -> None:
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf{}")
    assert read_input_text(bom, "result") == "{}"
    with pytest.raises(RooflensError, match="is a folder"):
        read_input_text(tmp_path, "result")
    with pytest.raises(RooflensError, match="not found"):
        read_input_text(tmp_path / "missing.json", "result")
    r, w = os.pipe()
    os.write(w, b"piped")
    os.close(w)
    assert read_input_text(f"/proc/self/fd/{r}", "result") == "piped"  # as /dev/stdin is
    os.close(r)
