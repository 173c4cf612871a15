#!/usr/bin/env python3
"""The repository's own rules, checked on every tracked file (git ls-files; a tree without git:
every file outside build*/ and dot folders):

- no machine path: no path under the work or home folders of a machine, anywhere;
- no fixed /tmp name: temporary files go under $TMPDIR (mktemp -t, tempfile,
  testing::MakeTempDir): no absolute /tmp/... in scripts (shell, Python, CMake), no /tmp/...XXXXXX
  template in C++ (other C++ strings are test data, never created); ALLOWED_TMP lists the
  exceptions with their reason;
- no session notes: nothing under docs/notes/, no *session*.md (design reasoning goes in
  docs/design/, what a session did in its report);
- no source file over 450 lines; README.md at most 350 lines;
- every relative link in a tracked markdown file resolves: the file exists and, with #anchor,
  the file has that heading (GitHub's anchors).

Usage: repository_test.py SOURCE_DIR      (exit 0 when every rule holds, 1 listing each breach)
       repository_test.py --self-test     (each rule, given a breaking file, finds it)
"""
import os
import re
import subprocess
import sys
import tempfile

MACHINE_PATH = re.compile("/" + "work/|/" + "home/")
# An absolute /tmp/ path in a script: /tmp/ not preceded by a path character ($root/tmp/ is fine).
FIXED_TMP = re.compile(r"(?:^|[\s=(:,{\[<-])[\"']?/tmp/")
# A mkdtemp/mkstemp template under a fixed /tmp in C++.
FIXED_TMP_CXX = re.compile(r"\"/tmp/[^\"]*XXXXXX")
CXX_EXT = (".cc", ".h", ".cpp", ".c")
# Files whose absolute /tmp/ paths are no file this repository makes on the machine, and why.
ALLOWED_TMP = {
    "tests/package/install_test.sh": "paths inside the debootstrap root the test makes",
}
SOURCE_EXT = (".cc", ".h", ".cpp", ".c", ".py", ".sh", ".cmake", ".proto")
MAX_SOURCE_LINES = 450
MAX_README_LINES = 350
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")


def tracked_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True,
                             check=True).stdout.decode()
        return [f for f in out.split("\0") if f and os.path.isfile(os.path.join(root, f))]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if not d.startswith((".", "build"))]
            files += [os.path.relpath(os.path.join(dirpath, f), root) for f in filenames]
        return files


def read_text(path):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if b"\0" in data:
        return None
    return data.decode("utf-8", "replace")


def is_source(rel):
    base = os.path.basename(rel)
    return (rel.endswith(SOURCE_EXT) or base == "CMakeLists.txt"
            or (rel.startswith("scripts/") and "." not in base))


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(text):
    seen, out = {}, set()
    in_code = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        m = None if in_code else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else f"{s}-{n}")
    out |= set(re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", text))
    return out


def link_breaches(root, rel, text):
    problems = []
    in_code = False
    for no, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            in_code = not in_code
        if in_code:
            continue
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            full = os.path.normpath(os.path.join(root, os.path.dirname(rel), path)) if path \
                else os.path.join(root, rel)
            if not os.path.exists(full):
                problems.append(f"{rel}:{no}: link to {target}: {path} does not exist")
            elif anchor and os.path.isfile(full) and full.endswith(".md"):
                if anchor not in anchors(read_text(full) or ""):
                    problems.append(f"{rel}:{no}: link to {target}: no heading #{anchor} there")
    return problems


def check(root):
    problems = []
    me = os.path.relpath(os.path.abspath(__file__), os.path.abspath(root))
    for rel in sorted(tracked_files(root)):
        if rel.startswith("docs/notes/") or re.search(r"session[^/]*\.md$", rel.lower()):
            problems.append(f"{rel}: a session note (docs/design/ holds lasting reasoning)")
        text = read_text(os.path.join(root, rel))
        if text is None:
            continue
        lines = text.splitlines()
        for no, line in enumerate(lines, 1):
            if MACHINE_PATH.search(line) and rel != me:
                problems.append(f"{rel}:{no}: a machine path: {line.strip()[:100]}")
            pattern = FIXED_TMP_CXX if rel.endswith(CXX_EXT) else FIXED_TMP
            if (is_source(rel) and rel not in ALLOWED_TMP and rel != me
                    and pattern.search(line)):
                problems.append(f"{rel}:{no}: a fixed /tmp name (use $TMPDIR): "
                                f"{line.strip()[:100]}")
        if is_source(rel) and len(lines) > MAX_SOURCE_LINES:
            problems.append(f"{rel}: {len(lines)} lines (at most {MAX_SOURCE_LINES})")
        if rel == "README.md" and len(lines) > MAX_README_LINES:
            problems.append(f"{rel}: {len(lines)} lines (at most {MAX_README_LINES})")
        if rel.endswith(".md"):
            problems += link_breaches(root, rel, text)
    return problems


def self_test():
    """Each rule finds a file that breaks it, and a clean tree passes."""
    breaking = {
        "a.sh": 'x=$(mktemp -d /tmp/x.XXXXXX)\n',
        "f.cc": 'char t[] = "/tmp/x_XXXXXX";\n',
        "g.py": 'out = "/tmp/result.json"\n',
        "h.sh": 'd=${BUILD_DIR:-/tmp/build}\n',
        "b.py": "p = '/" + "home/someone/data'\n",
        "c.cc": "int x;\n" * (MAX_SOURCE_LINES + 1),
        "README.md": "line\n" * (MAX_README_LINES + 1),
        "d.md": "[x](missing.md) [y](e.md#nowhere)\n",
        "i42-session2.md": "what I did\n",
    }
    clean = {"a.sh": 'x=$(mktemp -d -t x.XXXXXX); y="$root/tmp/a"; z="$w"/tmp/b\n',
             "f.cc": 'Parse({"--log_dir", "/tmp/l"});\n',
             "e.md": "# A title: `x` (y)\n[t](#a-title-x-y) [u](e.md)\n"}
    with tempfile.TemporaryDirectory() as d:
        for name, text in clean.items():
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        got = check(d)
        if got:
            sys.exit(f"self-test: a clean tree was refused: {got}")
        for name, text in breaking.items():
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
            got = check(d)
            if not any(p.startswith(name) for p in got):
                sys.exit(f"self-test: {name} was not found: {got}")
            os.remove(os.path.join(d, name))
    print("self-test: each rule finds its breach")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    self_test()
    problems = check(sys.argv[1])
    for p in problems:
        print(p)
    if problems:
        sys.exit(f"{len(problems)} breach(es) of the repository's rules")
    print("repository: no machine path, no fixed /tmp name, no session note, sizes within bounds, "
          "links resolve")


if __name__ == "__main__":
    main()
