"""Small text helpers for consultations: content words, stemming, lay vocabulary, fixed phrases.

Content words are :func:`engine.text.rouge.tokenize` words without stop words, stemmed with the
Snowball stemmer of the case's language (Chinese words are kept as jieba segments). They are
what fact matching (:mod:`engine.consult.patient.facts`) and the leakage measure
(:mod:`engine.consult.scoring.metrics`) compare.
"""

from __future__ import annotations

import re
from functools import lru_cache

from engine.text.language import LANGUAGE_NAMES, LANGUAGES, language_of
from engine.text.rouge import tokenize

__all__ = [
    "LANGUAGES",
    "LANGUAGE_NAMES",
    "LAY_TERMS",
    "QUERY_EXPANSIONS",
    "STOPWORDS",
    "UNKNOWN_PHRASES",
    "content_words",
    "expand_question",
    "first_sentences",
    "language_of",
    "lay_words",
]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_STOP = {
    "en": _words(
        """
    a about above after again all also am an and any are as at be been before being below
    between both but by can could did do does doing done down during each ever few for from
    further get got had has have having he her here hers herself him himself his how i if in
    into is it its itself just let me more most my myself no nor not now of off on once only or
    other our ours out over own please same she should so some such tell than that the their
    theirs them then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself okay ok
    hello hi thank thanks doctor sir madam well any anything something things thing much many
    like know think feel feeling yes lot kind sort really mr mrs ms
    """
    ),
    "fr": _words(
        """
    a au aux avec ce ces cet cette dans de des du elle en et eux il ils je la le les leur lui ma
    mais me meme mes moi mon ne nos notre nous on ou par pas pour qu que qui sa se ses son sur
    ta te tes toi ton tu un une vos votre vous c d j l m n s t y est sont ai as avez avons ont
    etes suis etait ete fait faites bonjour merci docteur quel quelle quels quelles comment
    est-ce parlez dites pouvez peux oui non tres plus
    """
    ),
    "zh": _words(
        """
    的 了 吗 呢 吧 啊 是 有 在 和 与 或 您 你 我 他 她 它 们 这 那 什么 怎么 请 一下 一些 医生 谢谢 吗 多少 哪里 没有 有没有 是否 情况 告诉 可以 能 会
    就 也 都 还 又 很 太
    """
    ),
}
STOPWORDS = _STOP

# Phrases a patient says when nothing they know answers the question.
UNKNOWN_PHRASES = {
    "en": "I'm not sure about that, doctor. I don't really know.",
    "fr": "Je ne sais pas trop, docteur.",
    "zh": "这个我不太清楚，医生。",
}

_STEMMER_NAMES = {"en": "english", "fr": "french"}


@lru_cache(maxsize=4)
def _stemmer(language: str):  # noqa: ANN202 - PyStemmer has no type hints
    name = _STEMMER_NAMES.get(language)
    if name is None:
        return None
    import Stemmer

    return Stemmer.Stemmer(name)


def content_words(text: str, language: str = "en") -> list[str]:
    """Stemmed words of ``text`` other than stop words and single letters."""
    words = tokenize(text)
    stop = STOPWORDS.get(language, STOPWORDS["en"]) | STOPWORDS["en"]
    kept = [w for w in words if w not in stop and not (len(w) == 1 and w.isalpha())]
    stemmer = _stemmer(language)
    if stemmer is not None:
        kept = stemmer.stemWords(kept)
    return kept


def first_sentences(text: str, n: int = 3) -> str:
    """The first ``n`` distinct sentences of ``text`` (Latin or Chinese punctuation)."""
    parts = [
        p.strip() for p in re.split(r"(?<=[.!?])\s+|(?<=[。！？])|\n+", text.strip()) if p.strip()
    ]
    return " ".join(list(dict.fromkeys(parts))[:n]).strip()


# Clinical terms and their everyday equivalents, used to make opening requests and the facts a
# patient is given sound like a patient. Whole-word, case-insensitive replacements.
LAY_TERMS: dict[str, str] = {
    "diplopia": "double vision",
    "dyspnea": "shortness of breath",
    "dyspnoea": "shortness of breath",
    "dysphagia": "trouble swallowing",
    "odynophagia": "pain when swallowing",
    "dysuria": "pain when peeing",
    "polyuria": "peeing a lot",
    "polydipsia": "being very thirsty",
    "hematuria": "blood in my urine",
    "haematuria": "blood in my urine",
    "hematochezia": "blood in my stool",
    "melena": "black, tarry stools",
    "hematemesis": "vomiting blood",
    "hemoptysis": "coughing up blood",
    "epistaxis": "nosebleeds",
    "syncope": "fainting",
    "vertigo": "the room spinning",
    "pyrexia": "fever",
    "febrile": "feverish",
    "emesis": "vomiting",
    "nausea and vomiting": "feeling sick and throwing up",
    "pruritus": "itching",
    "pruritic": "itchy",
    "erythema": "redness",
    "erythematous": "red",
    "edema": "swelling",
    "oedema": "swelling",
    "palpitations": "my heart racing",
    "tachycardia": "a fast heartbeat",
    "arthralgia": "joint pain",
    "myalgia": "muscle aches",
    "cephalgia": "headache",
    "rhinorrhea": "runny nose",
    "anorexia": "no appetite",
    "malaise": "feeling unwell",
    "fatigue": "tiredness",
    "diaphoresis": "sweating",
    "paresthesia": "pins and needles",
    "paresthesias": "pins and needles",
    "amenorrhea": "missed periods",
    "menorrhagia": "heavy periods",
    "dyspareunia": "pain during sex",
    "jaundice": "yellow skin",
    "icterus": "yellow eyes",
    "ataxia": "unsteadiness",
    "gait ataxia": "unsteady walking",
    "ptosis": "a droopy eyelid",
    "photophobia": "light hurting my eyes",
    "tinnitus": "ringing in my ears",
    "abdominal": "belly",
    "abdomen": "belly",
    "epigastric": "upper belly",
    "thoracic": "chest",
    "lumbar": "lower back",
    "cervical": "neck",
    "upper limb": "arm",
    "upper limbs": "arms",
    "lower limb": "leg",
    "lower limbs": "legs",
    "upper extremities": "arms",
    "lower extremities": "legs",
    "acute": "sudden",
    "chronic": "long-lasting",
    "intermittent": "on and off",
    "nocturnal": "at night",
    "postprandial": "after eating",
    "exertional": "when I exert myself",
    "loss of consciousness": "passing out",
}

_LAY_RE = re.compile(
    r"\b(" + "|".join(re.escape(t) for t in sorted(LAY_TERMS, key=len, reverse=True)) + r")\b",
    re.IGNORECASE,
)


def lay_words(text: str) -> str:
    """``text`` with common clinical terms replaced by everyday words (English only)."""
    return _LAY_RE.sub(lambda m: LAY_TERMS[m.group(1).lower()], text)


# Everyday words in a doctor's question and the words that name the same thing in a patient's
# record (English): "Do you have a fever?" also looks for "temperature". Applied to questions
# before fact matching.
QUERY_EXPANSIONS: dict[str, str] = {
    "fever": "temperature",
    "temperature": "fever",
    "old": "age",
    "age": "old demographics",
    "test": "laboratory blood imaging",
    "tests": "laboratory blood imaging",
    "results": "laboratory imaging",
    "medicine": "medications",
    "medicines": "medications",
    "pills": "medications",
    "drugs": "medications",
    "tablets": "medications",
    "smoke": "smoking tobacco",
    "cigarettes": "smoking tobacco",
    "drink": "alcohol",
    "drinking": "alcohol",
    "breathing": "respiratory breath",
    "breathe": "respiratory breath",
    "heartbeat": "heart rate pulse",
    "pulse": "heart rate",
    "pee": "urinary urine urinalysis",
    "urine": "urinary urinalysis",
    "poop": "bowel stool",
    "stool": "bowel",
    "period": "menstrual",
    "periods": "menstrual",
    "hurt": "pain",
    "hurts": "pain",
    "allergic": "allergies",
    "examine": "examination",
    "long": "duration onset",
    "start": "onset",
    "started": "onset",
    "begin": "onset",
    "began": "onset",
    "job": "occupation social",
    "work": "occupation social",
    "family": "family",
    "illnesses": "medical history",
    "pressure": "blood pressure",
}


def expand_question(text: str, language: str = "en") -> list[str]:
    """Content words of a question plus the record words they stand for (English)."""
    words = content_words(text, language)
    if language != "en":
        return words
    extra = " ".join(QUERY_EXPANSIONS.get(w, "") for w in tokenize(text))
    return words + content_words(extra, language)
