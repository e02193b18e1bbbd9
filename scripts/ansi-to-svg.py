#!/usr/bin/env python3
"""A terminal screen, as `tmux capture-pane -e -p` prints it (text with SGR colour escapes),
drawn as an SVG picture: one <text> run per stretch of one style, on a dark background.

    python3 scripts/ansi-to-svg.py COLUMNS ROWS < screen.ansi > picture.svg

Only what the explorer draws is read: SGR 0, 1, 2, 3, 4, 7, 22–27, 30–37, 39, 40–47, 49,
90–97, 100–107, and 38/48 with ;5;N (256 colours) or ;2;R;G;B. Wide characters (CJK) take
two cells. Standard library only.
"""
import re
import sys
import unicodedata
from html import escape

CELL_W, CELL_H, FONT = 8.4, 17, 14
BG, FG = "#1e1f22", "#d4d4d4"
BASE16 = [
    "#1e1f22", "#e06c75", "#98c379", "#e5c07b", "#61afef", "#c678dd", "#56b6c2", "#d4d4d4",
    "#5c6370", "#ff7b86", "#b5e890", "#ffd68a", "#82c4ff", "#dd9cf0", "#7fd6e0", "#ffffff",
]


def xterm256(n):
    if n < 16:
        return BASE16[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return "#%02x%02x%02x" % (steps[n // 36], steps[(n // 6) % 6], steps[n % 6])
    v = 8 + (n - 232) * 10
    return "#%02x%02x%02x" % (v, v, v)


class Style:
    def __init__(self):
        self.reset()

    def reset(self):
        self.fg = self.bg = None
        self.bold = self.dim = self.italic = self.underline = self.reverse = False

    def key(self):
        return (self.fg, self.bg, self.bold, self.dim, self.italic, self.underline, self.reverse)

    def apply(self, params):
        codes = [int(p) if p else 0 for p in params.split(";")] if params else [0]
        i = 0
        while i < len(codes):
            c = codes[i]
            if c == 0:
                self.reset()
            elif c == 1:
                self.bold = True
            elif c == 2:
                self.dim = True
            elif c == 3:
                self.italic = True
            elif c == 4:
                self.underline = True
            elif c == 7:
                self.reverse = True
            elif c == 22:
                self.bold = self.dim = False
            elif c == 23:
                self.italic = False
            elif c == 24:
                self.underline = False
            elif c == 27:
                self.reverse = False
            elif 30 <= c <= 37:
                self.fg = BASE16[c - 30]
            elif c == 39:
                self.fg = None
            elif 40 <= c <= 47:
                self.bg = BASE16[c - 40]
            elif c == 49:
                self.bg = None
            elif 90 <= c <= 97:
                self.fg = BASE16[c - 90 + 8]
            elif 100 <= c <= 107:
                self.bg = BASE16[c - 100 + 8]
            elif c in (38, 48) and i + 1 < len(codes):
                if codes[i + 1] == 5 and i + 2 < len(codes):
                    colour, i = xterm256(codes[i + 2]), i + 2
                elif codes[i + 1] == 2 and i + 4 < len(codes):
                    colour = "#%02x%02x%02x" % tuple(codes[i + 2 : i + 5])
                    i += 4
                else:
                    colour = None
                if c == 38:
                    self.fg = colour
                else:
                    self.bg = colour
            i += 1


def width(ch):
    return 2 if unicodedata.east_asian_width(ch) in "WF" else 1


def main():
    columns, rows = int(sys.argv[1]), int(sys.argv[2])
    screen = sys.stdin.read().split("\n")[:rows]
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{columns * CELL_W:.0f}" '
        f'height="{rows * CELL_H}" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" '
        f'font-size="{FONT}">',
        f'<rect width="100%" height="100%" fill="{BG}"/>',
    ]
    style = Style()
    for y, line in enumerate(screen):
        x = 0
        runs = []  # (x, style key, text)
        for part in re.split(r"(\x1b\[[0-9;]*m)", line):
            if part.startswith("\x1b["):
                style.apply(part[2:-1])
                continue
            part = re.sub(r"\x1b[^a-zA-Z]*[a-zA-Z]", "", part)
            for ch in part:
                if runs and runs[-1][1] == style.key() and runs[-1][3] == x:
                    runs[-1][2] += ch
                else:
                    runs.append([x, style.key(), ch, x])
                x += width(ch)
                runs[-1][3] = x
        for start, (fg, bg, bold, dim, italic, underline, reverse), text, end in runs:
            fg, bg = fg or FG, bg
            if reverse:
                fg, bg = (bg or BG), fg
            top = y * CELL_H
            if bg:
                out.append(
                    f'<rect x="{start * CELL_W:.1f}" y="{top}" width="{(end - start) * CELL_W:.1f}" '
                    f'height="{CELL_H}" fill="{bg}"/>'
                )
            if not text.strip():
                continue
            attrs = [f'x="{start * CELL_W:.1f}"', f'y="{top + CELL_H - 4}"', f'fill="{fg}"']
            if bold:
                attrs.append('font-weight="bold"')
            if dim:
                attrs.append('opacity="0.6"')
            if italic:
                attrs.append('font-style="italic"')
            if underline:
                attrs.append('text-decoration="underline"')
            attrs.append(f'textLength="{(end - start) * CELL_W:.1f}" lengthAdjust="spacingAndGlyphs"')
            out.append(f'<text {" ".join(attrs)} xml:space="preserve">{escape(text)}</text>')
    out.append("</svg>")
    print("\n".join(out))


if __name__ == "__main__":
    main()
