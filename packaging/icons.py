"""Draw the app icon (``packaging/icons/medexam.svg``) in the sizes each system wants.

    python packaging/icons.py OUT_DIR

writes ``OUT_DIR/png/medexam-N.png`` for the freedesktop icon sizes, ``medexam.ico`` (Windows,
16-256 px) and ``medexam.icns`` (macOS, 16-1024 px). The SVG is drawn by Qt (PySide6); the
``.ico`` and ``.icns`` files are written by Pillow. Both are in the build's environment.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SVG = Path(__file__).resolve().parent / "icons" / "medexam.svg"
PNG_SIZES = (16, 22, 24, 32, 48, 64, 128, 256, 512)
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)
ICNS_SIZES = (16, 32, 64, 128, 256, 512, 1024)


def render(size: int, svg: Path = SVG) -> bytes:
    """The SVG drawn as a ``size`` × ``size`` PNG with a transparent background."""
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    if QGuiApplication.instance() is None:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        render.app = QGuiApplication([])  # type: ignore[attr-defined]  # kept alive
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise ValueError(f"{svg} is not a valid SVG file")
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter)
    painter.end()
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")
    return bytes(data.data())


def write_icons(out: Path, svg: Path = SVG) -> dict[str, Path]:
    """Write every icon under ``out``; return ``{"png": folder, "ico": file, "icns": file}``."""
    import io

    from PIL import Image

    pngs = out / "png"
    pngs.mkdir(parents=True, exist_ok=True)
    sizes = sorted({*PNG_SIZES, *ICO_SIZES, *ICNS_SIZES})
    images = {n: render(n, svg) for n in sizes}
    for n in PNG_SIZES:
        (pngs / f"medexam-{n}.png").write_bytes(images[n])
    ico, icns = out / "medexam.ico", out / "medexam.icns"
    largest = Image.open(io.BytesIO(images[max(sizes)]))
    largest.save(ico, format="ICO", sizes=[(n, n) for n in ICO_SIZES])
    frames = [Image.open(io.BytesIO(images[n])) for n in ICNS_SIZES]
    frames[-1].save(icns, format="ICNS", append_images=frames[:-1])
    return {"png": pngs, "ico": ico, "icns": icns}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python packaging/icons.py OUT_DIR")
    for kind, path in write_icons(Path(sys.argv[1])).items():
        print(f"{kind}: {path}")
