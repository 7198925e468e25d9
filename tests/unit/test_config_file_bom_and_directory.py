"""harness.config.load_file: a settings file saved with a UTF-8 byte-order mark (as Windows editors save it) reads
like the same file without one; other bytes than UTF-8 are one line; a directory given as the file is named
as a directory, not as a file that is not found."""
import pytest

from harness.config import ConfigError, load_file

BOM = b"\xef\xbb\xbf"


@pytest.mark.parametrize("name, text", [("s.json", '{"scenario": "waypoints", "config": {"note": "caf\u00e9"}}'),
                                        ("s.toml", 'scenario = "waypoints"\n[config]\nnote = "caf\u00e9"\n')])
def test_a_file_with_a_byte_order_mark_reads_like_one_without(tmp_path, name, text):
    plain, marked = tmp_path / name, tmp_path / ("bom-" + name)
    plain.write_bytes(text.encode("utf-8"))
    marked.write_bytes(BOM + text.encode("utf-8"))
    assert load_file(str(marked)) == load_file(str(plain)) == {"scenario": "waypoints",
                                                               "config": {"note": "caf\u00e9"}}


@pytest.mark.parametrize("data", [b"\xff\xfe{\x00}\x00", b'{"note": "caf\xe9"}'])
def test_bytes_that_are_not_utf8_are_one_line(tmp_path, data):
    path = tmp_path / "s.json"
    path.write_bytes(data)
    with pytest.raises(ConfigError, match=r"s\.json: not valid JSON: 'utf-8' codec can't decode"):
        load_file(str(path))


@pytest.mark.parametrize("name", ["settings.json", "settings.toml"])
def test_a_directory_is_named_as_a_directory(tmp_path, name):
    (tmp_path / name).mkdir()
    pattern = r"^scenario file .*%s is a directory, not a file$" % name.replace(".", r"\.")
    with pytest.raises(ConfigError, match=pattern):
        load_file(str(tmp_path / name))


def test_a_utf8_file_reads_the_same_under_an_ascii_locale(tmp_path):
    import os
    import subprocess
    import sys
    path = tmp_path / "s.json"
    path.write_bytes('{"note": "caf\u00e9"}'.encode("utf-8"))
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, LC_ALL="C", LANG="C", PYTHONUTF8="0", PYTHONCOERCECLOCALE="0", PYTHONPATH=repo)
    proc = subprocess.run([sys.executable, "-c", "import sys, locale; from harness.config import load_file; "
                           "print(locale.getpreferredencoding(False), ascii(load_file(sys.argv[1])))", str(path)],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split(" ", 1)[1].strip() == ascii({"note": "caf\u00e9"})
