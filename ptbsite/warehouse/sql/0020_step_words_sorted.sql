-- The search of every trace reads a page's candidate steps from step_words by word (issue 27,
-- traces.search_across): the table is kept sorted by word (then run), so that a word's rows sit in a few row
-- groups (a plain file's zone maps, a Parquet file's statistics) instead of being looked for in every row. Rows
-- written since the last rewrite follow, unsorted; traces.search_across.sort_step_words rewrites the table sorted
-- once it holds twice the rows it had then (every batch of runs stored, and at the end of `manage.py reindex`).
-- This table holds that number (no row: 0, nothing sorted yet). Rows only move: no run needs re-indexing.
CREATE TABLE step_words_sorted (
    sorted_rows BIGINT NOT NULL
);
