-- The word index of trace text (issue 18, traces.search_index): per batch of steps written, one row per
-- (run, trace, word) with the sorted indices of the steps whose lower-cased input or output holds the word
-- (maximal runs of letters, marks, digits and '_'; a word over 100 characters is stored as the marker '').
-- A search looks its words up here and checks only those steps. Runs stored before this migration have no rows
-- (their runs.rules_version has no "search" key): they are searched by a scan until `manage.py reindex`.
CREATE TABLE step_words (
    run_id VARCHAR NOT NULL,
    trace VARCHAR NOT NULL,
    word VARCHAR NOT NULL,
    steps INTEGER[] NOT NULL
);
