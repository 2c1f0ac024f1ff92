#!/usr/bin/env bash
# schema/structure.sql is, byte for byte, what schema/print-structure prints for a new database
# that the migrator (//schema:migrate) has brought up to date: the file a reader opens for the
# current schema cannot drift from the migrations. On a difference it prints the diff and the
# command that regenerates the file. Needs the test PostgreSQL of tests/run (DCL_TEST_CONNINFO).
set -euo pipefail
: "${DCL_TEST_CONNINFO:?run through tests/run, which starts the test PostgreSQL}"
workspace="$TEST_SRCDIR/$TEST_WORKSPACE"
psql=/usr/lib/postgresql/15/bin/psql
admin="$DCL_TEST_CONNINFO dbname=postgres"
database="structure_test_$$_$RANDOM"
# A new, empty database (as TestDatabase(/*empty=*/true) makes one), dropped at the end.
"$psql" "$admin" -qc "CREATE DATABASE $database TEMPLATE template0"
trap '"$psql" "$admin" -qc "DROP DATABASE IF EXISTS $database WITH (FORCE)" || true' EXIT
migrated="$DCL_TEST_CONNINFO dbname=$database"
if ! "$workspace/schema/migrate" --database_url="$migrated" >"$TEST_TMPDIR/migrate.log" 2>&1; then
  cat "$TEST_TMPDIR/migrate.log"
  echo "structure_test: the migrator failed on a new database" >&2
  exit 1
fi
"$workspace/schema/print-structure" "$migrated" >"$TEST_TMPDIR/structure.sql"
if ! diff -u --label "schema/structure.sql (committed)" \
  --label "structure of a freshly migrated database" \
  "$workspace/schema/structure.sql" "$TEST_TMPDIR/structure.sql"; then
  echo "structure_test: schema/structure.sql is not the schema the migrations make (diff above)." >&2
  echo "Regenerate it and commit it with the migration: schema/regenerate-structure" >&2
  exit 1
fi
echo "structure_test: schema/structure.sql is the structure of a freshly migrated database" \
  "($(wc -l <"$TEST_TMPDIR/structure.sql") lines)"
