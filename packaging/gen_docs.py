#!/usr/bin/env python3
"""Writes accel-launch's man page and bash completion from the binary's own --help texts.

  gen_docs.py ACCEL_LAUNCH README.md OUT_MAN OUT_COMPLETION [ACCEL_PREFLIGHT OUT_PREFLIGHT_MAN]

The man page is `accel-launch --help` (synopsis), `accel-launch launch --help` (every option),
each command's --help (its own options) and the README's exit-code table: nothing is written
twice, so the page says what the binary says. The completion offers the same commands and
options. Standard library only.
"""

import re
import subprocess
import sys

COMMANDS = ["launch", "config", "env", "status", "report", "preflight", "token"]
CONFIG_SUBCOMMANDS = ["default", "validate"]


def help_text(binary, *args):
    done = subprocess.run([binary, *args, "--help"], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"gen_docs: {binary} {' '.join(args)} --help exited {done.returncode}")
    return done.stdout


def parse_options(text):
    """Returns [(group title, [(spellings, takes_value, description)])] from a CLI11 help text."""
    groups, current, entry = [], None, None
    for line in text.splitlines():
        if not line.strip():
            entry = None
            continue
        if not line.startswith(" ") and line.rstrip().endswith(":") and not line.startswith("Usage"):
            current = (line.rstrip()[:-1], [])
            groups.append(current)
            entry = None
            continue
        if current is None:
            continue
        match = re.match(r"^  (-\S+)(?: (VALUE|TEXT))?(?:\s{2,}(.*))?$", line)
        if match:
            spellings = [re.sub(r"\{.*\}$", "", s) for s in match.group(1).split(",")]
            entry = [spellings, match.group(2), match.group(3) or ""]
            current[1].append(entry)
        elif entry is not None and line.startswith("      "):
            entry[2] = (entry[2] + " " + line.strip()).strip()
    return [(title, [tuple(e) for e in entries]) for title, entries in groups]


def trailing_paragraph(text):
    """The free text after the last option group (CLI11 footer)."""
    blocks = [b for b in text.strip().split("\n\n") if b.strip()]
    last = blocks[-1] if blocks else ""
    return last if not last.startswith(" ") and ":\n" not in last else ""


def roff(text):
    text = text.replace("\\", "\\e").replace("-", "\\-")
    lines = []
    for line in text.split("\n"):
        lines.append("\\&" + line if line.startswith((".", "'")) else line)
    return "\n".join(lines)


def exit_table(readme):
    rows, inside = [], False
    for line in open(readme, encoding="utf-8"):
        if line.startswith("## "):
            inside = line.strip() == "## Exit codes"
            continue
        if inside and line.startswith("|") and not line.startswith("|---"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) == 2 and cells[0] != "code":
                rows.append(cells)
    return rows


def markdown_plain(text):
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return text.replace("`", "").replace("**", "")


def man_page(binary, readme):
    version = subprocess.run([binary, "--version"], capture_output=True, text=True,
                             check=False).stdout.strip()
    usage = help_text(binary)
    launch = help_text(binary, "launch")
    out = [
        '.TH ACCEL\\-LAUNCH 1 "" "%s" "User Commands"' % roff(version),
        ".SH NAME",
        "accel\\-launch \\- launch distributed LibTorch and PyTorch training "
        "(accelerate launch and torchrun in C++)",
        ".SH SYNOPSIS",
        ".nf",
        roff(re.sub(r"^(usage: |       )", "", usage.split("Every config key")[0].rstrip(),
                    flags=re.M)),
        ".fi",
        ".SH DESCRIPTION",
        roff(launch.splitlines()[0]),
        ".PP",
        roff(usage[usage.find("Every config key"):].strip().replace("\n", " ")),
        ".PP",
        roff(trailing_paragraph(launch)),
        ".SH OPTIONS",
    ]
    launch_spellings = set()
    for title, entries in parse_options(launch):
        out.append(".SS " + roff(title))
        for spellings, value, description in entries:
            launch_spellings.add(spellings[0])
            out.append(".TP")
            out.append(", ".join("\\fB%s\\fR" % roff(s) for s in spellings) +
                       (" \\fI%s\\fR" % value if value else ""))
            out.append(roff(description))
    out.append(".SH COMMANDS")
    for command in COMMANDS[1:]:
        text = help_text(binary, command)
        out.append(".SS accel\\-launch %s" % command)
        first = text.splitlines()[0]
        out.append(roff(first if not first.startswith("usage:") else text.splitlines()[1]))
        extra = [e for _, entries in parse_options(text) for e in entries
                 if e[0][0] not in launch_spellings]
        if text.startswith("usage:"):
            out += [".PP", ".nf", roff(text.splitlines()[0][len("usage: "):]), ".fi"]
        for spellings, value, description in extra:
            out.append(".TP")
            out.append(", ".join("\\fB%s\\fR" % roff(s) for s in spellings) +
                       (" \\fI%s\\fR" % value if value else ""))
            out.append(roff(description))
    out.append(".SH EXIT STATUS")
    for code, meaning in exit_table(readme):
        out += [".TP", "\\fB%s\\fR" % roff(code), roff(markdown_plain(meaning))]
    out += [
        ".SH FILES",
        ".TP",
        "\\fI~/.config/accel\\-launch/default_config.yaml\\fR",
        "the config `accel\\-launch config' writes (or $HF_HOME/accelerate/default_config.yaml)",
        ".SH SEE ALSO",
        "\\fBtorchrun\\fR(1), \\fBsrun\\fR(1), \\fBmpirun\\fR(1); the README and docs/config.md of "
        "accel\\-launch",
    ]
    return "\n".join(out) + "\n"


def completion(binary):
    words = {}
    value_options = set()
    for command in COMMANDS:
        spellings = []
        for _, entries in parse_options(help_text(binary, command)):
            for names, value, _ in entries:
                spellings += names
                if value:
                    value_options.update(names)
        for word in re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", help_text(binary, command)
                               if command in ("report", "token") else ""):
            spellings.append(word)
        words[command] = sorted(set(spellings))
    lines = [
        "# bash completion for accel-launch (written by packaging/gen_docs.py from its --help)",
        "_accel_launch() {",
        '  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} i w cmd=""',
        "  for ((i = 1; i < COMP_CWORD; i++)); do",
        '    w=${COMP_WORDS[i]}',
        '    case $w in',
        '      -*) ;;',
        '      %s) [[ -z $cmd ]] && cmd=$w ;;' % "|".join(COMMANDS),
        '      *) if [[ -z $cmd || $cmd == launch ]]; then',
        '           case " $_accel_launch_value_options " in',
        '             *" ${COMP_WORDS[i-1]} "*) ;;',
        '             *) return 0 ;;  # the program: its arguments are its own (default completion)',
        '           esac',
        '         fi ;;',
        '    esac',
        "  done",
        '  case " $_accel_launch_value_options " in',
        '    *" $prev "*) COMPREPLY=($(compgen -f -- "$cur")); return 0 ;;',
        '  esac',
        '  if [[ $cur == -* ]]; then',
        '    local -n opts=_accel_launch_opts_${cmd:-launch}',
        '    COMPREPLY=($(compgen -W "$opts" -- "$cur"))',
        '  elif [[ -z $cmd ]]; then',
        '    COMPREPLY=($(compgen -W "%s" -f -- "$cur"))' % " ".join(COMMANDS),
        '  elif [[ $cmd == config && ${COMP_WORDS[COMP_CWORD-1]} == config ]]; then',
        '    COMPREPLY=($(compgen -W "%s" -- "$cur"))' % " ".join(CONFIG_SUBCOMMANDS),
        "  else",
        '    COMPREPLY=($(compgen -f -- "$cur"))',
        "  fi",
        "}",
        '_accel_launch_value_options="%s"' % " ".join(sorted(value_options)),
    ]
    for command in COMMANDS:
        lines.append('_accel_launch_opts_%s="%s"' % (command, " ".join(words[command])))
    lines.append("complete -o default -F _accel_launch accel-launch")
    return "\n".join(lines) + "\n"


def preflight_page(binary, version):
    """accel-preflight's page: its usage line (what it prints for bad arguments)."""
    done = subprocess.run([binary], capture_output=True, text=True, check=False)
    usage = re.search(r"usage: (.*)", done.stderr)
    if not usage:
        sys.exit(f"gen_docs: {binary} printed no usage line")
    return "\n".join([
        '.TH ACCEL\\-PREFLIGHT 1 "" "%s" "User Commands"' % roff(version),
        ".SH NAME",
        "accel\\-preflight \\- one machine's side of accel\\-launch's network preflight",
        ".SH SYNOPSIS",
        ".nf", roff(usage.group(1)), ".fi",
        ".SH DESCRIPTION",
        "accel\\-launch starts it on every machine of a job (\\fBaccel\\-launch preflight\\fR, or "
        "\\fB\\-\\-preflight\\fR before training) to measure bandwidth and latency between every pair "
        "of machines and an all\\-reduce of the bucket size; it is not meant to be run by hand.",
        ".SH SEE ALSO",
        "\\fBaccel\\-launch\\fR(1)",
    ]) + "\n"


def main():
    if len(sys.argv) not in (5, 7):
        sys.exit("usage: gen_docs.py ACCEL_LAUNCH README.md OUT_MAN OUT_COMPLETION "
                 "[ACCEL_PREFLIGHT OUT_PREFLIGHT_MAN]")
    binary, readme, out_man, out_completion = sys.argv[1:5]
    if len(sys.argv) == 7:
        version = subprocess.run([binary, "--version"], capture_output=True, text=True,
                                 check=False).stdout.strip()
        with open(sys.argv[6], "w", encoding="utf-8") as f:
            f.write(preflight_page(sys.argv[5], version))
    with open(out_man, "w", encoding="utf-8") as f:
        f.write(man_page(binary, readme))
    with open(out_completion, "w", encoding="utf-8") as f:
        f.write(completion(binary))


if __name__ == "__main__":
    main()
