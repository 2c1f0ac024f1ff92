#!/usr/bin/env python3
"""Every dclctl command shown in a code block of README.md or docs/ names a command dclctl has,
and every flag it uses is one that `dclctl COMMAND --help` lists (the command's own usage line or
the flags every command takes). A renamed flag or command fails here, naming the page and line.

Run by Bazel (tests/docs/BUILD) with dclctl and the pages as data.
"""
import os
import re
import shlex
import subprocess
import sys

DCLCTL = "dclctl/dclctl"
FENCE = re.compile(r"^\s*```")
# A command line in a code block: optionally a shell prompt, then dclctl and its arguments.
COMMAND = re.compile(r"^\s*(?:\$\s+)?dclctl(\s.*)?$")


def pages():
    yield "README.md"
    for name in sorted(os.listdir("docs")):
        if name.endswith(".md"):
            yield os.path.join("docs", name)


def code_blocks(path):
    """The page's fenced code blocks, each a list of (line number, text)."""
    block = None
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if FENCE.match(line):
                if block is not None:
                    yield block
                block = None if block is not None else []
            elif block is not None:
                block.append((number, line.rstrip("\n")))


def commands_in(path):
    """(line number, argument text) of each dclctl command in the page's code blocks, with
    continuation lines joined and a trailing shell comment dropped. In a block with shell prompts
    only the prompted lines are commands (the rest is their output); a line whose first words
    end in a colon ("dclctl place: refused …") is dclctl's own output, not a command."""
    for block in code_blocks(path):
        prompted = any(text.lstrip().startswith("$ ") for _, text in block)
        yield from commands_of_block(block, prompted)


def commands_of_block(block, prompted):
    """commands_in for one block."""
    pending = None
    for number, text in block:
        if pending is not None:
            start, so_far = pending
            text = so_far + " " + text.strip()
        else:
            match = COMMAND.match(text)
            if not match or (prompted and not text.lstrip().startswith("$ ")):
                continue
            start, text = number, (match.group(1) or "").strip()
            if re.match(r"^[a-z-]+( [a-z-]+)?:", text):
                continue  # dclctl's output: "dclctl move advance: refused …"
        if text.endswith("\\"):
            pending = (start, text[:-1].strip())
            continue
        pending = None
        yield start, text


def words_and_flags(arguments):
    try:
        tokens = shlex.split(arguments, comments=True)
    except ValueError as e:
        return None, None, f"cannot be read as a shell command ({e})"
    # Output redirection and what follows it belong to the shell.
    for i, token in enumerate(tokens):
        if token in (">", ">>", "|", "&", "&&", ";", "2>", "2>&1"):
            tokens = tokens[:i]
            break
    words = []
    for token in tokens:
        if token.startswith("-"):
            break
        words.append(token)
    flags = []
    for token in tokens:
        if token.startswith("--") and len(token) > 2:
            name = token[2:].split("=", 1)[0].replace("-", "_")
            flags.append(name)
    return words, flags, None


def help_of(words):
    result = subprocess.run([DCLCTL, *words, "--help"], capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        return None
    return result.stdout


def flags_listed(help_text):
    return set(name.replace("-", "_") for name in re.findall(r"--([a-z][a-z0-9_-]*)", help_text))


def main():
    failures = []
    checked = 0
    failed = 0
    for page in pages():
        for line, arguments in commands_in(page):
            before = len(failures)
            check(page, line, arguments, failures)
            checked += 1
            failed += len(failures) > before
    for failure in failures:
        print("FAIL " + failure)
    print(f"dclctl commands in the docs: {checked - failed} passed, {failed} failed")
    if checked == 0:
        print("FAIL no dclctl command found in README.md and docs/: the check read nothing")
        return 1
    return 1 if failures else 0


def check(page, line, arguments, failures):
    """Appends to `failures` what is wrong with one command."""
    where = f"{page}:{line}: dclctl {arguments}"
    words, flags, problem = words_and_flags(arguments)
    if problem:
        failures.append(f"{where}\n    {problem}")
        return
    if not words and flags == ["help"]:
        return
    text = help_of(words)
    if text is None or not text.startswith("usage: dclctl "):
        failures.append(f"{where}\n    no such command (dclctl {' '.join(words)} --help "
                        "does not name one)")
        return
    known = flags_listed(text) | {"help"}
    for flag in flags:
        bare = flag[2:] if flag.startswith("no") and flag[2:] in known else flag
        if bare not in known:
            failures.append(f"{where}\n    --{flag} is not a flag of "
                            f"'{text.splitlines()[0][len('usage: '):]}' nor of every "
                            "command")


if __name__ == "__main__":
    sys.exit(main())
