#!/usr/bin/env python3
"""Writes the tokenizer benchmark corpus: about 10 MB of mixed English, source code and CJK text
taken from freely licensed files a Debian 12 machine carries, interleaved in blocks so every part
of the file mixes all three.

  English  Debian package documentation (/usr/share/doc: README, changelog, copyright files)
           and /usr/share/common-licenses
  code     the Python 3 standard library (/usr/lib/python3*) and C headers (/usr/include)
  CJK      translations of Debian packages (/usr/share/locale/{zh_CN,zh_TW,ja,ko}/.../*.mo),
           the translated strings decoded from the .mo catalogues

usage: /usr/bin/python3 bench/make_tokenizer_corpus.py OUT [--mb 10]
Deterministic for a given set of installed packages (files are read in sorted order); the file
is not committed. Standard library only.
"""
import argparse
import glob
import gzip
import os
import struct

SHARES = {"english": 0.45, "code": 0.35, "cjk": 0.20}
BLOCK = 4096


def read_text(path):
    try:
        if path.endswith(".gz"):
            with gzip.open(path, "rb") as f:
                data = f.read()
        else:
            with open(path, "rb") as f:
                data = f.read()
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError, EOFError):
        return None


def english_files():
    names = ("README", "README.md", "README.txt", "NEWS", "NEWS.gz", "changelog.gz",
             "changelog.Debian.gz", "copyright", "README.Debian")
    files = []
    for name in names:
        files += glob.glob(f"/usr/share/doc/*/{name}")
    files += glob.glob("/usr/share/common-licenses/*")
    return sorted(set(f for f in files if os.path.isfile(f)))


def code_files():
    files = glob.glob("/usr/lib/python3*/*.py") + glob.glob("/usr/lib/python3*/*/*.py")
    files += glob.glob("/usr/include/*.h") + glob.glob("/usr/include/*/*.h")
    return sorted(f for f in files if os.path.isfile(f))


def mo_strings(path):
    """Translated strings of a GNU .mo catalogue (UTF-8 ones only)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return []
    if len(data) < 28:
        return []
    magic = struct.unpack("<I", data[:4])[0]
    endian = "<" if magic == 0x950412DE else ">" if magic == 0xDE120495 else None
    if endian is None:
        return []
    _, count, _, trans_offset = struct.unpack(endian + "4I", data[4:20])
    out = []
    for i in range(count):
        length, offset = struct.unpack(endian + "2I", data[trans_offset + 8 * i:trans_offset + 8 * i + 8])
        raw = data[offset:offset + length]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return []  # not a UTF-8 catalogue
        if i == 0 and "Content-Type" in text:
            continue  # the header entry
        out += [s for s in text.split("\0") if s.strip()]
    return out


def cjk_texts():
    for lang in ("zh_CN", "zh_TW", "ja", "ko"):
        for path in sorted(glob.glob(f"/usr/share/locale/{lang}/LC_MESSAGES/*.mo")):
            strings = mo_strings(path)
            if strings:
                yield "\n".join(strings) + "\n"


def blocks(texts, budget):
    """Cuts texts into ~BLOCK-byte pieces at line ends until `budget` bytes are collected."""
    out, total = [], 0
    for text in texts:
        if text is None:
            continue
        start = 0
        while start < len(text) and total < budget:
            end = text.find("\n", start + BLOCK // 3)  # characters, roughly a block of bytes
            end = len(text) if end < 0 else end + 1
            piece = text[start:end]
            out.append(piece)
            total += len(piece.encode("utf-8"))
            start = end
        if total >= budget:
            break
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--mb", type=float, default=10.0)
    args = parser.parse_args()
    budget = int(args.mb * 1e6)
    sources = {
        "english": blocks((read_text(f) for f in english_files()), budget * SHARES["english"]),
        "code": blocks((read_text(f) for f in code_files()), budget * SHARES["code"]),
        "cjk": blocks(cjk_texts(), budget * SHARES["cjk"]),
    }
    # Interleave proportionally: at each step take from the source furthest behind its share.
    taken = {k: 0 for k in sources}
    index = {k: 0 for k in sources}
    written = 0
    with open(args.out, "w", encoding="utf-8", newline="") as f:
        while written < budget:
            live = [k for k in sources if index[k] < len(sources[k])]
            if not live:
                break
            k = min(live, key=lambda s: taken[s] / SHARES[s])
            piece = sources[k][index[k]]
            index[k] += 1
            n = len(piece.encode("utf-8"))
            taken[k] += n
            written += n
            f.write(piece)
    total = sum(taken.values())
    parts = ", ".join(f"{k} {taken[k] / 1e6:.2f} MB" for k in sources)
    print(f"{args.out}: {total / 1e6:.2f} MB ({parts})")


if __name__ == "__main__":
    main()
