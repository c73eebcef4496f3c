"""markertools.parse — a turn's text to a `TurnPlan` (docs/rules.md EXT, VAL, TRN-1).

The modules, in the order data flows through them (each calls only the ones listed
after it, never back up):

1. `turn`          `parse_turn`: caps, TRN-1 order, VAL-8 names -> the `plan`;
2. `validate`      raw block -> validated `Command` (strict JSON, fields, clamps), with
   `validate_fast` (the happy path) and `jsonstrict` (the strict JSON reader);
3. `blocks`        text -> `RawBlock`s exactly as CommonMark renders them (EXT-*), with
   `lists` (hand-decided list items) and `commonmark` (the markdown-it fallback,
   with `cmarkrules`: its overrides that follow cmark-gfm);
4. `lines`         text -> fence lines and cuts (the C-speed prefilter and scanner);
5. `nearmiss`      an info string -> kind, near miss or ordinary;
6. `kinds`, `kindspec`, `params`, `plan`: the kind table and the value types every
   stage above reads.

`guide` and `schema` render the kind table for people and for JSON Schema.

May import: `markertools.domain`, `markertools.text`. Never delivery or injection.
Module paths are internal; the stable names are re-exported by `markertools`.
"""
