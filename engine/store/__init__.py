"""The store: one SQLite database and what keeps it.

store.py        the Store
dbfile.py       the file opened with its checks
migrations.py   the schema, one migration per version
scorerows.py    the scores' rows
corpusrows.py   the retrieval corpora's rows
deleted.py      deleting runs, with an undo
owner.py        which process owns a run
changes.py      what another process changed
fingerprint.py  a data set's fingerprint
"""
