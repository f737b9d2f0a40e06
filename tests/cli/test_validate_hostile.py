"""``validate`` against hostile servers: what it reads is bounded (size, time per document and
per run, redirects, local files), and every failure while reading is one problem line, never a
traceback, with the rest of the tree still checked."""

from __future__ import annotations

import gzip
import itertools
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from xml.sax.saxutils import escape

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitemap_middleware.cli.fetch import Fetcher, FetchError, Limits
from sitemap_middleware.cli.validate import Checker

from ..hostile import HostileServer, Reply, hostile_serving
from ..xsd import SCHEMA_DIR, schemas_available
from .test_cli import index, run, url, urlset

pytestmark = pytest.mark.server

REPO = Path(__file__).resolve().parents[2]
FAST = ("--document-timeout", "0.5")  # a document's deadline small enough for a test


@pytest.fixture
def hostile() -> Iterator[HostileServer]:
    with hostile_serving() as server:
        yield server


def good(server: HostileServer, name: str) -> str:
    return urlset(url(server.url(f"/p/{name}")))


# -- size and memory ----------------------------------------------------------------------

MIB = 1024 * 1024


def bomb(head: bytes, filler: bytes, tail: bytes, gigabytes: int) -> Iterator[bytes]:
    """A gzip stream of ``head``, ``gigabytes`` GiB of ``filler`` and ``tail``, made cheaply:
    one member of 1 MiB of filler is compressed once and sent again and again (gzip members
    concatenate, RFC 1952 §2.2)."""
    repeated = filler * (MIB // len(filler))
    member = gzip.compress(repeated, compresslevel=9)
    yield gzip.compress(head)
    for _ in range(gigabytes * 1024):
        yield member
    yield gzip.compress(tail)


# The child's own peak: VmHWM belongs to its address space, made at exec. (ru_maxrss does not:
# Linux carries the parent's peak across fork and exec, so a busy test worker's would show.)
CHILD = """
import re, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))  # a guard for the machine, not the test
from sitemap_middleware.cli import main
code = main(sys.argv[1:])
status = open("/proc/self/status").read()
print("maxrss-kib", re.search(r"VmHWM:\\s*(\\d+)", status).group(1))
sys.exit(code)
"""

OPEN = b'<?xml version="1.0"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'


@pytest.mark.parametrize(
    ("head", "filler", "tail", "encoded", "message"),
    [
        # The fault as found: 10 MB of gzip holding a 10 GiB comment (on the wire, Content-Encoding).
        pytest.param(
            OPEN + b"<!--",
            b"a",
            b"-->\n</urlset>\n",
            True,
            "is more than 52,428,800 bytes",
            id="one-huge-comment",
        ),
        # libxml2 refuses a text node past 10 MB (huge_tree off), in its own words.
        pytest.param(
            OPEN + b"<url><loc>http://x/",
            b"a",
            b"</loc></url>\n</urlset>\n",
            False,
            "not well-formed XML",
            id="huge-text-node",
        ),
        pytest.param(
            OPEN + b"<url><loc>http://x/</loc></url>",
            b" ",
            b"</urlset>\n",
            False,
            "not well-formed XML",
            id="space",
        ),
        pytest.param(
            OPEN,
            b"<!--" + b"c" * 1017 + b"-->\n",
            b"</urlset>\n",
            False,
            "is more than 52,428,800 bytes uncompressed",
            id="many-small-comments",
        ),
        pytest.param(
            OPEN + b"<url><loc>http://x/</loc>",
            b"<x/>",
            b"</url>\n</urlset>\n",
            False,
            "elements",
            id="elements-in-one-url",
        ),
    ],
)
def test_a_gzip_bomb_is_read_only_to_the_limit_in_flat_memory(hostile, head, filler, tail, encoded, message):
    def route(reply: Reply) -> None:
        headers = (("Content-Encoding", "gzip"),) if encoded else ()
        reply.head(content_type="application/xml" if encoded else "application/gzip", headers=headers)
        site = hostile.url("/").encode()  # the locs on the sitemap's own host
        for part in bomb(head.replace(b"http://x/", site), filler, tail, gigabytes=10):
            reply.write(part)

    hostile.add("/sitemap.xml.gz", route)
    result = subprocess.run(
        [sys.executable, "-c", CHILD, "validate", hostile.url("/sitemap.xml.gz")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    lines = result.stdout.splitlines()
    peak_mib = int(lines[-1].split()[-1]) / 1024  # the validate process's own peak RSS
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.returncode == 1, lines
    problems = [line for line in lines if line.startswith(hostile.url("/sitemap.xml.gz"))]
    assert len(problems) == 1, lines
    assert message in problems[0]
    assert peak_mib < 300, lines


# -- every failure while reading is a problem line ---------------------------------------


def test_a_truncated_gzip_child_is_a_problem_and_its_siblings_are_checked(hostile):
    whole = gzip.compress(urlset(*(url(hostile.url(f"/p/{n}")) for n in range(200))).encode())
    hostile.serve("/truncated.xml.gz", whole[: len(whole) // 2], content_type="application/gzip")
    hostile.serve("/a.xml", good(hostile, "a"))
    hostile.serve("/b.xml", good(hostile, "b"))
    children = ("/a.xml", "/truncated.xml.gz", "/b.xml")
    hostile.serve("/index.xml", index(*map(hostile.url, children)))
    code, lines = run("validate", hostile.url("/index.xml"), *FAST)
    assert code == 1, lines
    [problem] = [line for line in lines if "truncated" in line]
    assert problem.startswith(hostile.url("/index.xml:4: "))
    assert hostile.url("/truncated.xml.gz") in problem
    assert lines[-1].startswith("checked 4 files, ") and lines[-1].endswith(": 1 problems, 0 warnings")
    assert hostile.hits["/a.xml"] == hostile.hits["/b.xml"] == 1


def stall_after_half(reply: Reply, body: bytes) -> None:
    reply.head(length=len(body))
    reply.write(body[: len(body) // 2])
    reply.stall()


def test_a_body_that_stalls_is_a_problem_and_its_siblings_are_checked(hostile):
    body = urlset(*(url(hostile.url(f"/p/{n}")) for n in range(100))).encode()
    hostile.add("/stalls.xml", lambda reply: stall_after_half(reply, body))
    hostile.serve("/a.xml", good(hostile, "a"))
    hostile.serve("/index.xml", index(hostile.url("/stalls.xml"), hostile.url("/a.xml")))
    code, lines = run("validate", hostile.url("/index.xml"), *FAST)
    assert code == 1, lines
    [problem] = [line for line in lines if hostile.url("/stalls.xml") in line]
    assert problem.startswith(hostile.url("/index.xml:3: ")) and "0.5 s" in problem
    assert lines[-1].startswith("checked 3 files, ") and lines[-1].endswith(": 1 problems, 0 warnings")


def test_a_fault_of_validate_itself_is_a_problem_line_and_the_run_goes_on(hostile):
    def clock() -> datetime:
        raise RuntimeError("no clock")  # called for the lastmod of c1.xml only

    hostile.serve("/c0.xml", good(hostile, "c0"))
    hostile.serve("/c1.xml", urlset(url(hostile.url("/p/c1"), "<lastmod>2026-01-01</lastmod>")))
    hostile.serve("/c2.xml", good(hostile, "c2"))
    hostile.serve("/index.xml", index(*(hostile.url(f"/c{n}.xml") for n in range(3))))
    lines: list[str] = []
    summary = Checker(report=lambda problem: lines.append(str(problem)), now=clock).check(
        hostile.url("/index.xml")
    )
    assert lines == [
        f"{hostile.url('/index.xml:4:')} {hostile.url('/c1.xml')} could not be checked, a fault in "
        "validate: RuntimeError('no clock') (please report it)"
    ]
    assert (summary.files, summary.urls, summary.problems) == (4, 2, 1)  # c1.xml's URL not whole


def test_a_start_target_cut_off_mid_stream_is_a_problem_not_a_failure_to_run(hostile):
    body = urlset(*(url(hostile.url(f"/p/{n}")) for n in range(100))).encode()
    hostile.add("/stalls.xml", lambda reply: stall_after_half(reply, body))
    code, lines = run("validate", hostile.url("/stalls.xml"), *FAST)
    assert code == 1, lines
    assert next(line for line in lines if "deadline" in line).startswith(hostile.url("/stalls.xml:"))
    assert lines[-1].startswith("checked 1 files, ")


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(lambda reply: reply.head("404 Not Found", length=0), id="404"),
        pytest.param(lambda reply: reply.redirect("ftp://127.0.0.1/x"), id="redirect-to-ftp"),
        pytest.param(lambda reply: reply.stall(), id="no-answer"),
    ],
)
def test_a_start_target_that_cannot_be_fetched_exits_2_with_a_summary(hostile, answer):
    hostile.add("/sitemap.xml", answer)
    code, lines = run("validate", hostile.url("/sitemap.xml"), *FAST)
    assert code == 2, lines
    assert lines[0].startswith(hostile.url("/sitemap.xml:0: cannot be read: "))
    assert lines[-1] == "checked 0 files, 0 URLs: 1 problems, 0 warnings"


def test_a_robots_txt_chain_is_not_followed_past_the_start(hostile):
    def robots(reply: Reply) -> None:
        number = int(reply.path.partition("?")[2] or 0)
        body = f"Sitemap: {hostile.url(f'/robots.txt?{number + 1}')}\n".encode()
        reply.head(content_type="text/plain", length=len(body))
        reply.write(body)

    hostile.add("/robots.txt", robots)  # and every /robots.txt?N
    code, lines = run("validate", hostile.url("/robots.txt"), *FAST)
    assert code == 1, lines
    assert lines == [
        f"{hostile.url('/robots.txt?1')}:1: a robots.txt or other text, not a sitemap or index: "
        "only the starting target may be a robots.txt",
        "checked 2 files, 0 URLs: 1 problems, 0 warnings",
    ]


def test_a_robots_txt_naming_itself_is_read_once(hostile):
    hostile.serve("/robots.txt", f"Sitemap: {hostile.url('/robots.txt')}\n", content_type="text/plain")
    code, lines = run("validate", hostile.url("/robots.txt"), *FAST)
    assert hostile.hits["/robots.txt"] == 1
    assert code == 0, lines


# -- deadlines and concurrency -----------------------------------------------------------


def trickle_body(reply: Reply) -> None:
    body = urlset(*(url(f"http://{reply.host}/p/{n}") for n in range(1000))).encode()
    reply.head(length=len(body))
    reply.write(body[:200])
    for offset in range(200, len(body)):
        reply.write(body[offset : offset + 1])
        if not reply.pause(0.02):
            return


def trickle_headers(reply: Reply) -> None:
    for byte in b"HTTP/1.1 200 OK\r\n" + b"X-Slow: " + b"s" * 10_000:
        reply.write(bytes([byte]))
        if not reply.pause(0.02):
            return


@pytest.mark.parametrize("route", [trickle_body, trickle_headers], ids=["body", "headers"])
def test_a_trickling_server_is_given_up_at_the_document_deadline(hostile, route):
    hostile.add("/slow.xml", route)
    hostile.serve("/a.xml", good(hostile, "a"))
    hostile.serve("/index.xml", index(hostile.url("/slow.xml"), hostile.url("/a.xml")))
    started = time.monotonic()
    code, lines = run("validate", hostile.url("/index.xml"), *FAST)
    elapsed = time.monotonic() - started
    assert code == 1, lines
    [problem] = [line for line in lines if hostile.url("/slow.xml") in line]
    assert problem.startswith(hostile.url("/index.xml:3: ")) and "deadline of 0.5 s" in problem
    assert elapsed < 0.5 + 1.5, elapsed  # the deadline, and room for a busy machine
    assert lines[-1].endswith(": 1 problems, 0 warnings") and hostile.hits["/a.xml"] == 1


class Meeting:
    """Children whose first ``size`` answer only once all of them are being fetched (or after
    2 s); the rest at once. The most fetched at once is what a test reads."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.arrived = self.now = self.most = 0
        self.condition = threading.Condition()

    def route(self, body: str):
        def answer(reply: Reply) -> None:
            with self.condition:
                self.arrived += 1
                self.now += 1
                self.most = max(self.most, self.now)
                self.condition.notify_all()
                self.condition.wait_for(lambda: self.arrived >= self.size, timeout=2)
                # Left before the answer is sent: its client cannot start another one sooner.
                self.now -= 1
            reply.head(length=len(body))
            reply.write(body.encode())

        return answer


def test_children_are_fetched_concurrently_but_no_more_than_the_limit(hostile):
    meeting = Meeting(size=3)
    names = [f"/c{n}.xml" for n in range(12)]
    for name in names:
        hostile.add(name, meeting.route(good(hostile, name)))
    hostile.serve("/index.xml", index(*map(hostile.url, names)))
    code, lines = run("validate", hostile.url("/index.xml"), "--concurrency", "3")
    assert code == 0, lines
    assert meeting.most == 3
    assert lines[-1] == "checked 13 files, 12 URLs: 0 problems, 0 warnings"


def test_reports_follow_the_index_when_children_finish_out_of_order(hostile):
    answered: list[int] = []
    others_done = threading.Event()

    def child(number: int):
        body = urlset(url(hostile.url(f"/p/{number}"), f"<priority>{number + 2}</priority>")).encode()

        def answer(reply: Reply) -> None:
            if number == 0:
                others_done.wait(2)  # the first child answers last
            reply.head(length=len(body))
            reply.write(body)
            answered.append(number)
            if len(answered) == 3:
                others_done.set()

        return answer

    for number in range(4):
        hostile.add(f"/c{number}.xml", child(number))
    hostile.serve("/index.xml", index(*(hostile.url(f"/c{n}.xml") for n in range(4))))
    code, lines = run("validate", hostile.url("/index.xml"))
    assert answered[-1] == 0
    assert code == 1
    assert lines[:4] == [
        f"{hostile.url(f'/c{n}.xml')}:3: priority '{n + 2}' is not a number from 0.0 to 1.0" for n in range(4)
    ]


def test_an_index_s_children_are_reported_right_after_it(hostile):
    # Each document has one problem (a bad priority), so the report names them in order.
    def bad(name: str) -> str:
        return urlset(url(hostile.url(f"/p{name}"), "<priority>2</priority>"))

    for group in ("a", "b"):
        for n in range(3):
            hostile.serve(f"/{group}{n}.xml", bad(f"/{group}{n}"))
        hostile.serve(f"/{group}.xml", index(*(hostile.url(f"/{group}{n}.xml") for n in range(3))))
    hostile.serve("/c.xml", bad("/c"))
    robots = "".join(f"Sitemap: {hostile.url(name)}\n" for name in ("/a.xml", "/b.xml", "/c.xml"))
    hostile.serve("/robots.txt", robots, content_type="text/plain")
    code, lines = run("validate", hostile.url("/robots.txt"))
    assert code == 1
    assert [line.partition(hostile.url("/"))[2].partition(":")[0] for line in lines[:-1]] == [
        *("a0.xml", "a1.xml", "a2.xml"),
        *("b0.xml", "b1.xml", "b2.xml"),
        "c.xml",
    ]
    assert lines[-1] == "checked 10 files, 7 URLs: 7 problems, 0 warnings"


def test_past_the_run_deadline_what_was_not_checked_is_counted(hostile):
    names = [f"/hangs{n}.xml" for n in range(30)]
    for name in names:
        hostile.add(name, Reply.stall)
    hostile.serve("/index.xml", index(*map(hostile.url, names)))
    started = time.monotonic()
    code, lines = run("validate", hostile.url("/index.xml"), "--run-timeout", "1", "--concurrency", "2")
    elapsed = time.monotonic() - started
    assert code == 1, lines
    abandoned = [line for line in lines if "hangs" in line]
    assert len(abandoned) == 2 and all("deadline of 1 s" in line for line in abandoned), lines
    assert (
        hostile.url("/index.xml:0: 28 listed documents not checked: the run's deadline of 1 s passed")
        in lines
    )
    assert elapsed < 1 + 1.5, elapsed


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--document-timeout", "0"),
        ("--run-timeout", "0"),
        ("--concurrency", "0"),
        ("--base-url", "http://[x/"),
        ("--base-url", "ftp://shop.example/"),
    ],
)
def test_an_option_out_of_its_range_is_refused(option, value, capsys):
    with pytest.raises(SystemExit) as exit:
        run("validate", "x.xml", option, value)
    assert exit.value.code == 2
    assert option in capsys.readouterr().err


def test_validate_help_names_its_bounds_and_defaults(capsys):
    with pytest.raises(SystemExit):
        run("validate", "--help")
    help = " ".join(capsys.readouterr().out.split())
    for option, default in [("--document-timeout", "120"), ("--run-timeout", "3600"), ("--concurrency", "8")]:
        assert option in help and f"(default: {default})" in help


# -- redirects, local files, entities ----------------------------------------------------


def test_a_redirect_to_another_host_is_a_problem_naming_it(hostile):
    elsewhere = hostile.url("/elsewhere.xml", host="localhost")
    hostile.serve("/elsewhere.xml", good(hostile, "elsewhere"))
    hostile.add("/moved.xml", lambda reply: reply.redirect(elsewhere))
    hostile.serve("/index.xml", index(hostile.url("/moved.xml")))
    code, lines = run("validate", hostile.url("/index.xml"), *FAST)
    assert code == 1, lines
    [problem] = [line for line in lines if "moved.xml" in line]
    assert problem.startswith(hostile.url("/index.xml:3: ")) and elsewhere in problem
    assert hostile.hits["/elsewhere.xml"] == 0


def test_a_redirect_to_ftp_is_a_problem_and_opens_no_connection(hostile):
    with socket.create_server(("127.0.0.1", 0)) as listener:
        target = f"ftp://127.0.0.1:{listener.getsockname()[1]}/sitemap.xml"
        hostile.add("/moved.xml", lambda reply: reply.redirect(target))
        hostile.serve("/index.xml", index(hostile.url("/moved.xml")))
        code, lines = run("validate", hostile.url("/index.xml"), *FAST)
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()[0].close()  # a connection was made
    assert code == 1, lines
    [problem] = [line for line in lines if "moved.xml" in line]
    assert problem.startswith(hostile.url("/index.xml:3: ")) and target in problem


@pytest.mark.parametrize(("hops", "clean"), [(5, True), (6, False)])
def test_at_most_five_redirects_are_followed(hostile, hops, clean):
    for hop in range(hops):
        hostile.add(f"/r{hop}.xml", lambda reply, hop=hop: reply.redirect(f"/r{hop + 1}.xml", "301 Moved"))
    hostile.serve(f"/r{hops}.xml", good(hostile, "r"))
    hostile.serve("/index.xml", index(hostile.url("/r0.xml")))
    code, lines = run("validate", hostile.url("/index.xml"), *FAST)
    if clean:
        assert code == 0, lines
    else:
        assert code == 1
        [problem] = [line for line in lines if "r0.xml" in line]
        assert "more than 5 redirects" in problem and hostile.url("/r6.xml") in problem
        assert hostile.hits["/r6.xml"] == 0


def test_a_remote_robots_txt_never_names_a_local_file(hostile, tmp_path, monkeypatch):
    # file:///secret/sitemap.xml read as a path is file:/secret/sitemap.xml: make it exist here.
    local = tmp_path / "file:" / "secret" / "sitemap.xml"
    local.parent.mkdir(parents=True)
    local.write_text(urlset(url("https://elsewhere.example/p")))
    monkeypatch.chdir(tmp_path)
    hostile.serve(
        "/robots.txt",
        "Sitemap: file:///secret/sitemap.xml\nSitemap: /etc/passwd\n",
        content_type="text/plain",
    )
    code, lines = run("validate", hostile.url("/robots.txt"), *FAST)
    assert code == 1, lines
    assert lines == [
        f"{hostile.url('/robots.txt')}:1: Sitemap: 'file:///secret/sitemap.xml' is not an http(s) URL",
        f"{hostile.url('/robots.txt')}:2: Sitemap: '/etc/passwd' is not an absolute URL",
        "checked 1 files, 0 URLs: 2 problems, 0 warnings",
    ]


LOC = "<url><loc>https://shop.example/p/&x;</loc></url>"


@pytest.mark.parametrize(
    ("prolog", "line", "words"),
    [
        pytest.param("", 3, ("Entity 'x' not defined",), id="no-dtd"),
        pytest.param('<!DOCTYPE urlset SYSTEM "urlset.dtd">\n', 4, ("&x;",), id="external-dtd"),
        pytest.param('<!DOCTYPE urlset [<!ENTITY x "a">]>\n', 4, ("&x;",), id="internal-entity"),
        pytest.param(
            '<!DOCTYPE urlset [<!ENTITY x SYSTEM "file:///etc/hostname">]>\n',
            4,
            ("&x;",),
            id="external-entity",
        ),
        pytest.param(
            '<!DOCTYPE urlset [<!ENTITY a "aaaaaaaaaa">'
            + "".join(
                f'<!ENTITY {b} "{("&" + a + ";") * 10}">' for a, b in zip("abcdefgh", "bcdefghx", strict=True)
            )
            + "]>\n",
            None,
            ("entity amplification", "&x;"),  # refused where the DTD declares them, or never expanded
            id="billion-laughs",
        ),
    ],
)
def test_an_entity_in_a_loc_is_reported_not_dropped(tmp_path, prolog, line, words):
    path = tmp_path / "sitemap.xml"
    path.write_text(
        '<?xml version="1.0"?>\n'
        + prolog
        + '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        + LOC
        + "\n</urlset>\n"
    )
    code, lines = run("validate", str(path), "--base-url", "https://shop.example/")
    assert code == 1, lines
    [problem] = lines[:-1]
    assert problem.startswith(f"{path}:{line or ''}") and any(word in problem for word in words), problem


def test_problems_past_the_first_thousand_of_a_file_are_counted_not_shown(tmp_path):
    path = tmp_path / "sitemap.xml"
    bad = [url(f"https://shop.example/p/{n}", "<priority>2</priority>") for n in range(1500)]
    path.write_text(urlset(*bad))
    code, lines = run("validate", str(path), "--base-url", "https://shop.example/")
    assert code == 1
    assert len(lines) == 1000 + 2
    assert lines[-2] == f"{path}:1003: 500 more problems from this line on, not shown"
    assert lines[-1] == "checked 1 files, 1,500 URLs: 1,500 problems, 0 warnings"


def test_a_gzip_file_of_several_members_is_one_document(hostile):
    # RFC 1952 §2.2: a gzip file is a series of members (the bombs above are made so).
    document = good(hostile, "a").encode()
    halves = gzip.compress(document[:50]) + gzip.compress(document[50:])
    hostile.serve("/sitemap.xml.gz", halves, content_type="application/gzip")
    code, lines = run("validate", hostile.url("/sitemap.xml.gz"))
    assert code == 0, lines
    assert lines[-1] == "checked 1 files, 1 URLs: 0 problems, 0 warnings"


# -- what the stream decodes -----------------------------------------------------------------


def gzip_in_members(data: bytes, cuts: list[int]) -> bytes:
    points = sorted({0, len(data), *(cut % (len(data) + 1) for cut in cuts)})
    return b"".join(gzip.compress(data[a:b]) for a, b in itertools.pairwise(points))


def test_any_gzip_members_in_any_chunks_decode_to_the_document():
    # RFC 1952 §2.2: a gzip file is a series of members; the network splits it anywhere.
    with hostile_serving() as server, Fetcher(Limits(timeout=10)) as fetcher:

        @settings(max_examples=60, deadline=None)
        @given(
            data=st.binary(max_size=200_000),
            cuts=st.lists(st.integers(min_value=0), max_size=4),
            splits=st.lists(st.integers(min_value=1, max_value=70_000), max_size=6),
            encoded=st.booleans(),
        )
        def decodes(data: bytes, cuts: list[int], splits: list[int], encoded: bool) -> None:
            body = gzip_in_members(data, cuts)

            def route(reply: Reply) -> None:
                headers = (("Content-Encoding", "gzip"),) if encoded else ()
                reply.head(length=len(body), headers=headers)
                rest = body
                for size in splits:
                    reply.write(rest[:size])
                    rest = rest[size:]
                reply.write(rest)

            server.add("/data.gz", route)
            with fetcher.open(server.url("/data.gz")) as opened:
                assert opened.stream.read_up_to(len(data) + 1) == data

        decodes()


@pytest.mark.parametrize(
    ("body", "headers", "problem"),
    [
        pytest.param(lambda doc: doc, (), "", id="plain"),
        pytest.param(gzip.compress, (("Content-Encoding", "gzip"),), "", id="content-encoding"),
        pytest.param(gzip.compress, (), "", id="gz-file"),
        pytest.param(
            lambda doc: gzip.compress(gzip.compress(doc)), (("Content-Encoding", "gzip"),), "", id="both"
        ),
        pytest.param(lambda doc: doc, (("Content-Encoding", "br"),), "Content-Encoding br", id="brotli"),
        pytest.param(lambda doc: gzip.compress(doc)[:10] + b"\xff" * 40, (), "unreadable", id="corrupt-gzip"),
        pytest.param(lambda doc: doc, (("Content-Encoding", "gzip"),), "unreadable", id="not-gzip-at-all"),
    ],
)
def test_what_a_server_sends_is_decoded_or_reported(hostile, body, headers, problem):
    hostile.serve("/sitemap.xml", body(good(hostile, "a").encode()), headers=headers)
    hostile.serve("/index.xml", index(hostile.url("/sitemap.xml")))
    code, lines = run("validate", hostile.url("/index.xml"))
    if not problem:
        assert code == 0, lines
        assert lines == ["checked 2 files, 1 URLs: 0 problems, 0 warnings"]
    else:
        assert code == 1
        assert lines[0].startswith(hostile.url("/index.xml:3: ")) and problem in lines[0], lines


def test_a_fetcher_never_opens_a_file_for_a_remote_document(tmp_path):
    path = tmp_path / "sitemap.xml"
    path.write_text("<urlset/>")
    with Fetcher() as fetcher:
        with fetcher.open(str(path)) as opened:
            assert opened.head == b"<urlset/>"
        with (
            pytest.raises(FetchError, match="never names a local file"),
            fetcher.open(str(path), local=False),
        ):
            pass


def test_schemas_check_children_read_in_parallel(hostile):
    if not schemas_available():
        pytest.skip(f"official sitemap XSDs not found in {SCHEMA_DIR}")
    names = [f"/c{n}.xml" for n in range(8)]
    for name in names:
        hostile.serve(name, urlset(url(hostile.url(f"/p{name}"), "<unknown>1</unknown>")))
    hostile.serve("/index.xml", index(*map(hostile.url, names)))
    code, lines = run("validate", hostile.url("/index.xml"), "--schemas", str(SCHEMA_DIR))
    assert code == 1
    schema = [line.partition(": ")[0] for line in lines if ": schema: " in line]
    assert schema == [f"{hostile.url(name)}:3" for name in names]


ANY_TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\ufffe\uffff"))
# The characters a URI may hold, so the checks past the pattern are reached.
URI_TEXT = st.text(st.sampled_from("aZ09-._~:/?#[]@!$&'()*+,;=%"))
LOCS = st.one_of(ANY_TEXT, st.builds("http://{}".format, URI_TEXT), st.builds("https://{}".format, ANY_TEXT))


@pytest.mark.parametrize("kind", ["urlset", "index"])
def test_any_loc_is_checked_without_a_traceback(tmp_path, kind):
    path = tmp_path / "sitemap.xml"

    @settings(max_examples=100, deadline=None)
    @given(loc=LOCS)
    def checked(loc: str) -> None:
        entry = f"<loc>{escape(loc)}</loc>"
        path.write_text(urlset(f"<url>{entry}</url>") if kind == "urlset" else index(escape(loc)))
        code, lines = run("validate", str(path), "--base-url", "https://shop.example/")
        assert code in (0, 1), lines
        assert lines[-1].startswith("checked ")

    checked()
