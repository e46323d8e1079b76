"""The question bank a student works from: marks, notes and why a question was missed
(:mod:`~engine.bank.notebook`), pools of questions by what the student did with them
(:mod:`~engine.bank.pools`), custom blocks by pool, subject and difficulty, saved to be
repeated (:mod:`~engine.bank.blocks`), each question's difficulty from how people and models
answered it (:mod:`~engine.bank.difficulty`), and where the student stands, subject by
subject, beside the models evaluated on the same questions (:mod:`~engine.bank.standing`).
"""
