"""A consultation's dialogue as chat bubbles: the person's or model doctor's questions on the
right, the patient's replies on the left (the person's consultation and a model run's live
transcript)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gui.widgets.common import esc

if TYPE_CHECKING:
    from engine.types import Row

ROLE_STYLE = {
    # role: (label, background, text colour, align)
    "doctor": ("You", "#dbeafe", "#1e3a8a", "right"),
    "patient": ("Patient", "#f1f3f6", "#111827", "left"),
}


def transcript_html(turns: Sequence[Row], doctor_label: str = "You") -> str:
    """Chat bubbles for a list of ``{role, text}`` turns."""
    rows = []
    for t in turns:
        label, bg, fg, align = ROLE_STYLE.get(t["role"], ROLE_STYLE["patient"])
        if t["role"] == "doctor":
            label = doctor_label
        kind = (t.get("extra") or {}).get("kind")
        if kind == "conclusion":
            label += " (concludes)"
        text = esc(t["text"]).replace("\n", "<br>") or "<span style='color:#9ca3af'>…</span>"
        pad_l, pad_r = ("18%", "0") if align == "right" else ("0", "18%")
        rows.append(
            f"<table width='100%' cellspacing='0' cellpadding='0' style='margin:4px 0'>"
            f"<tr><td style='padding-left:{pad_l}; padding-right:{pad_r}' align='{align}'>"
            f"<div style='color:#6b7280; font-size:8.5pt'>{esc(label)}</div>"
            f"<table cellpadding='9' cellspacing='0' style='background:{bg}'>"
            f"<tr><td style='color:{fg}'>{text}</td></tr></table></td></tr></table>"
        )
    return "".join(rows)
