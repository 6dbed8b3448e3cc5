#!/usr/bin/env python3
"""Check a Marp-style Markdown deck before showing it.

Usage: python3 skills/slides/check_deck.py DECK.slides.md

Prints "N slides" ("1 slide") and then one line per problem (FILE:LINE: message) on
stderr. Problems: no front matter, a front matter without "marp: true", no
slides, an empty slide, a local image that does not exist. Exit status: 0
no problem; 1 problems; 2 usage or an unreadable file. Standard library only.
"""

import os
import re
import sys
from urllib.parse import unquote, urlparse

# Markdown images ![alt](src "title") and HTML <img src="...">.
MD_IMAGE = re.compile(r"!\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+[\"'][^)]*[\"'])?\s*\)")
HTML_IMAGE = re.compile(r"<img\s[^>]*\bsrc\s*=\s*[\"']([^\"']+)[\"']", re.IGNORECASE)
# Marp's background images in directives: <!-- backgroundImage: url(x.png) -->
CSS_URL = re.compile(r"url\(\s*[\"']?([^\"')]+)[\"']?\s*\)")
COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
FENCE = re.compile(r"^\s*(```|~~~)")


def front_matter(lines):
    """Returns (fields, index of the first body line) or (None, 0)."""
    if not lines or lines[0].lstrip("\ufeff").strip() != "---":
        return None, 0
    for i in range(1, len(lines)):
        if lines[i].strip() == "---":
            fields = {}
            for line in lines[1:i]:
                key, sep, value = line.partition(":")
                if sep and not line.startswith((" ", "\t")):
                    fields[key.strip()] = value.strip().strip("\"'")
            return fields, i + 1
    return None, 0


def split_slides(lines, start):
    """Yields (first line number, lines) per slide; a line "---" outside a
    code fence separates slides."""
    slide, first, fenced = [], start + 1, False
    for n, line in enumerate(lines[start:], start + 1):
        if FENCE.match(line):
            fenced = not fenced
        if not fenced and line.strip() == "---":
            yield first, slide
            slide, first = [], n + 1
            continue
        slide.append(line)
    yield first, slide


def local_images(text):
    for pattern in (MD_IMAGE, HTML_IMAGE, CSS_URL):
        for m in pattern.finditer(text):
            src = m.group(1)
            parsed = urlparse(src)
            if parsed.scheme or src.startswith(("//", "#")):
                continue  # http(s), data: and anchors are not files
            yield unquote(parsed.path)


def check(path):
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        print(f"check_deck.py: cannot read {path}: {exc}", file=sys.stderr)
        return 2
    problems = []
    fields, start = front_matter(lines)
    if fields is None:
        problems.append((1, 'no front matter: the deck must start with "---", "marp: true", "---"'))
    elif fields.get("marp", "").lower() != "true":
        problems.append((1, 'the front matter lacks "marp: true"; without it the deck shows as a document, not as slides'))
    base = os.path.dirname(os.path.abspath(path))
    count = 0
    slides = list(split_slides(lines, start))
    for first, body in slides:
        text = "\n".join(body)
        if not COMMENT.sub("", text).strip():
            # A body with no separator and no content is reported once, as
            # a deck without slides.
            if len(slides) == 1:
                continue
            problems.append((first, "empty slide (two separators with nothing between, or a trailing ---)"))
            continue
        count += 1
        for src in local_images(text):
            if not os.path.exists(os.path.join(base, src)):
                problems.append((first, f"image {src} not found (paths are relative to the deck's folder)"))
    if count == 0:
        problems.append((start + 1, "the deck has no slides"))
    print(f"{count} slide{'' if count == 1 else 's'}")
    for line, message in problems:
        print(f"{path}:{line}: {message}", file=sys.stderr)
    return 1 if problems else 0


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    return check(sys.argv[1])


if __name__ == "__main__":
    sys.exit(main())
