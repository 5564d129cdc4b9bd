-- The rows of a merged statement (see db/merge.rs): the elements of a JSON array. It does what
-- json_array_elements does, but tells the planner to expect one row rather than a hundred, so
-- that a merged UPDATE or DELETE looks each row up by its index instead of scanning the table.
CREATE FUNCTION msgline_rows(rows json) RETURNS SETOF json
LANGUAGE plpgsql STABLE ROWS 1 AS $$
BEGIN
    RETURN QUERY SELECT json_array_elements(rows);
END
$$;
