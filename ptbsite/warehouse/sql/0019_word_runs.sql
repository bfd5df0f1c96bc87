-- The inverted index of the search of every trace (issue 27, traces.search_index): per batch of steps written,
-- one row per word of the batch with the runs of the batch whose steps (any trace, whole texts of cut fields
-- included) hold the word, the same words as step_words. A run is its id read as a 64-bit number (a run id is 16
-- hex characters, traces.layout.run_id): a list of numbers is read 3x faster than one of strings. A search
-- across runs finds the runs that can hold a query from these rows (merged to one per word at the end of an
-- ingest), not from every (run, trace, word) row of step_words. Filled by the ingest from this migration on, and
-- by `manage.py reindex` for runs stored before (whose search version changed with this index).
CREATE TABLE word_runs (
    word VARCHAR NOT NULL,
    runs UBIGINT[] NOT NULL
);
