// SPDX-License-Identifier: Apache-2.0
import Shared
import Testing

struct SQLStatementSplitterTests {
    @Test func splitsAtSemicolonsThatEndStatements() {
        let script = """
            -- a comment; not a statement
            CREATE TABLE a (note text DEFAULT 'x;y', "odd;name" int);
            /* block; comment */
            INSERT INTO a (note) VALUES ('it''s; fine');
            CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql;
            CREATE FUNCTION g() RETURNS int AS $body$ BEGIN RETURN 2; END $body$ LANGUAGE plpgsql;
            SELECT $1::int
            """
        #expect(SQLStatementSplitter.split(script) == [
            "-- a comment; not a statement\nCREATE TABLE a (note text DEFAULT 'x;y', \"odd;name\" int)",
            "/* block; comment */\nINSERT INTO a (note) VALUES ('it''s; fine')",
            "CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql",
            "CREATE FUNCTION g() RETURNS int AS $body$ BEGIN RETURN 2; END $body$ LANGUAGE plpgsql",
            "SELECT $1::int",
        ])
    }

    @Test func dropsEmptyAndCommentOnlyStatements() {
        #expect(SQLStatementSplitter.split(";;\n -- only a comment\n;  ") == [])
    }
}
