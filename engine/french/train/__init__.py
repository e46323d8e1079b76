"""The French activity's training kinds (:mod:`engine.train.kinds`), registered through its
descriptor's ``trainings_from``: the encoder reader (:mod:`~engine.french.train.reader`, its
work in :mod:`~engine.french.train.reader_data`, :mod:`~engine.french.train.reader_heads`
and :mod:`~engine.french.train.reader_task`), the seq2seq reader
(:mod:`~engine.french.train.seq2seq`, :mod:`~engine.french.train.seq2seq_task`) and the
generative writer, LoRA on a local chat model (:mod:`~engine.french.train.writer`)."""
