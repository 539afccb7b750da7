"""What lint must report for each folder of ``tests/promises/broken_datasets/``: the exact
multiset of (file relative to the dataset folder, JSON pointer, a distinctive substring of the
message), and where the corpus and its valid control are."""

from __future__ import annotations

from evalkit.dataset._json import MAX_DEPTH
from tests.support.builders import REPO

BROKEN = REPO / "tests" / "promises" / "broken_datasets"
VALID = REPO / "tests" / "promises" / "datasets" / "minimal_valid"

Expected = tuple[str, str, str]

E = "data/entry.json"
S = "dataset.schema.json"
OVERFLOW = "number too large: it overflows to infinity"
EXPECTED: dict[str, list[Expected]] = {
    # --- rules A-D ------------------------------------------------------------------------------
    "rule_a_bias_missing_group": [
        ("data/bias_no_group.json", "/bias_group", "rule A: a bias entry needs a bias_group")],
    "rule_a_bias_group_on_non_bias": [
        ("data/functional.json", "/bias_group",
         "rule A: bias_group is only allowed on bias entries")],
    "rule_b_functional_null_expected": [
        ("data/functional.json", "/expected_output",
         "rule B: functional needs a non-null expected_output")],
    "rule_b_mixed_with_repeatability": [
        ("data/mixed.json", "/expected_output",
         "rule B: functional needs a non-null expected_output")],
    "rule_c_repeatability_non_null": [
        ("data/repeat.json", "/expected_output",
         "rule C: an entry that is only bias/repeatability must have expected_output null")],
    "rule_c_bias_non_null": [
        ("data/bias/casual.json", "/expected_output",
         "rule C: an entry that is only bias/repeatability must have expected_output null")],
    "rule_d_human_review_without_instructions": [
        ("data/review.json", "/human_instructions",
         "rule D: human_review is true but human_instructions is missing")],
    "rule_d_empty_instructions": [
        ("data/review.json", "/human_instructions", "must not be empty")],
    # --- $schema --------------------------------------------------------------------------------
    "schema_ref_missing": [(E, "/$schema", "required field is missing")],
    "schema_ref_not_string": [(E, "/$schema", "must be string, found a number")],
    "schema_ref_wrong_depth": [
        ("data/sub/too_shallow.json", "/$schema",
         "'dataset.schema.json' does not resolve to the dataset's dataset.schema.json"),
        ("data/sub/one_level_short.json", "/$schema",
         "'../dataset.schema.json' does not resolve to the dataset's dataset.schema.json")],
    "schema_ref_absolute_url": [
        (E, "/$schema", "'https://json-schema.org/draft/2020-12/schema' is not a relative path")],
    "schema_ref_absolute_path": [(E, "/$schema", "'/dataset.schema.json' is not a relative path")],
    "schema_ref_empty": [(E, "/$schema", "must not be empty")],
    "schema_ref_other_file": [
        (E, "/$schema", "'../README.md' does not resolve to the dataset's dataset.schema.json")],
    # --- test_types, group ------------------------------------------------------------------------
    "unknown_test_type": [(E, "/test_types/1", "unknown test type 'unit'")],
    "empty_test_types": [(E, "/test_types", "test_types is empty")],
    "test_types_not_array": [(E, "/test_types", "must be array, found a string")],
    "duplicate_test_type": [(E, "/test_types", "test_types lists a type twice")],
    "comma_in_group": [(E, "/group", "group 'billing,shipping' contains a comma")],
    # --- the JSON itself ------------------------------------------------------------------------
    "invalid_json_syntax": [(E, "", "not valid JSON: Expecting property name")],
    "duplicate_json_key": [(E, "", "not valid JSON: duplicate key 'input'")],
    "top_level_array": [(E, "", "an entry must be a JSON object, found an array")],
    "json_string_file": [(E, "", "an entry must be a JSON object, found a string")],
    "json_null_file": [(E, "", "an entry must be a JSON object, found null")],
    "invalid_utf8": [(E, "", "not valid JSON: not UTF-8")],
    "nan_literal": [(E, "", "not valid JSON: NaN is not valid JSON")],
    "empty_file": [(E, "", "not valid JSON: Expecting value")],
    # --- envelope fields --------------------------------------------------------------------------
    "missing_input": [(E, "/input", "required field is missing")],
    "missing_expected_output": [(E, "/expected_output", "required field is missing")],
    "input_wrong_type": [(E, "/input", "must be string or object, found a number")],
    "bias_group_wrong_type": [
        ("data/bias/a.json", "/bias_group", "must be string or integer, found a boolean")],
    "mock_fixtures_not_object": [(E, "/mock_fixtures", "must be object, found an array")],
    "human_review_not_boolean": [(E, "/human_review", "must be boolean, found a string")],
    # --- bias groups ------------------------------------------------------------------------------
    "bias_group_single_variant": [
        ("data/bias/lonely.json", "/bias_group", "bias group 'lonely' has only one variant")],
    "bias_group_int_vs_string": [
        ("data/bias/a.json", "/bias_group", "bias group 7 has only one variant"),
        ("data/bias/b.json", "/bias_group", "bias group '7' has only one variant")],
    # 1.0 is an integer for JSON Schema, so the envelope accepts it: the group has one variant.
    "bias_group_float_single_variant": [
        ("data/bias/a.json", "/bias_group", "has only one variant")],
    # --- the dataset folder -----------------------------------------------------------------------
    "schema_file_missing": [
        ("dataset.schema.json", "", "dataset.schema.json is missing")],
    "schema_not_valid_json_schema": [
        ("dataset.schema.json", "/type", "not a valid JSON Schema: 'objekt'")],
    "schema_not_json": [
        ("dataset.schema.json", "", "not valid JSON: Expecting property name")],
    "schema_not_object": [("dataset.schema.json", "", "not a valid JSON Schema")],
    "schema_metaschema_not_string": [
        ("dataset.schema.json", "/$schema", "not a valid JSON Schema")],
    "schema_unresolvable_ref": [
        ("dataset.schema.json", "/properties/input/$ref", "#/$defs/text")],
    "project_schema_violation": [
        ("data/bad_category.json", "/category",
         "violates dataset.schema.json: 'refunds' is not one of"),
        ("data/bad_ticket.json", "/input/ticket",
         "violates dataset.schema.json: 42 is not of type 'string'"),
        ("data/no_category.json", "/category",
         "violates dataset.schema.json: 'category' is a required property")],
    "project_schema_pointer_escaping": [
        (E, "/meta/a~1b", "violates dataset.schema.json: 1 is not of type 'string'"),
        (E, "/meta/c~0d", "violates dataset.schema.json: 2 is not of type 'string'")],
    "project_schema_cannot_override_rules": [
        (E, "/expected_output", "rule B: functional needs a non-null expected_output")],
    "no_data_files": [("data", "", "no entry files (data/**/*.json) found")],
    "no_data_folder": [("data", "", "no entry files (data/**/*.json) found")],
    "no_readme": [("README.md", "", "README.md is missing")],
    "data_subfolder_named_json": [
        ("data/v1.json/entry.json", "/expected_output",
         "rule B: functional needs a non-null expected_output")],
    # --- pathological JSON ------------------------------------------------------------------------
    "deep_nesting_entry_parse": [(E, "", "nested too deeply to parse")],
    "deep_nesting_object_keys": [(E, "", "nested too deeply to parse")],
    "deep_nesting_entry_walk": [
        (E, "/expected_output" + "/0" * (MAX_DEPTH - 1), f"nested more than {MAX_DEPTH} levels")],
    "deep_nesting_schema_parse": [("dataset.schema.json", "", "nested too deeply to parse")],
    "deep_nesting_schema_walk": [
        ("dataset.schema.json", "/properties/a" * (MAX_DEPTH // 2),
         f"nested more than {MAX_DEPTH} levels")],
    "overflow_input": [(E, "/input/n", OVERFLOW)],
    "overflow_expected": [(E, "/expected_output", OVERFLOW)],
    "overflow_in_array": [(E, "/expected_output/1", OVERFLOW)],
    "overflow_extra_field": [(E, "/score", OVERFLOW)],
    "overflow_mock_fixtures": [(E, "/mock_fixtures/db/rows/0", OVERFLOW)],
    "overflow_schema": [("dataset.schema.json", "/properties/score/maximum", OVERFLOW)],
    "huge_integer": [(E, "", "an integer of 5000 digits is longer than Python reads")],
    "surrogate_input": [(E, "/input", "string holds an unpaired surrogate escape \\ud800")],
    "surrogate_expected": [
        (E, "/expected_output", "string holds an unpaired surrogate escape \\udfff")],
    "surrogate_field": [(E, "/group", "string holds an unpaired surrogate escape \\ud83d")],
    "surrogate_key": [(E, "/input/\\udc00", "key holds an unpaired surrogate escape \\udc00")],
    "surrogate_reversed_pair": [
        (E, "/expected_output", "string holds an unpaired surrogate escape \\ude00")],
    "surrogate_schema": [
        ("dataset.schema.json", "/description", "string holds an unpaired surrogate escape")],
    # --- $refs that leave dataset.schema.json ---------------------------------------------------
    "schema_ref_http": [(S, "/properties/input/$ref", "points to the network")],
    "schema_ref_https": [(S, "/properties/input/$ref", "points to the network")],
    "schema_ref_nested_id_http": [
        (S, "/properties/input/$ref", "$ref 'text.json' points to the network")],
    "schema_dynamic_ref_http": [
        (S, "/properties/input/$dynamicRef", "$dynamicRef 'https://example.com/meta.json#node' "
         "points to the network")],
    "schema_ref_file_url_outside": [
        (S, "/properties/input/$ref", "'file:///etc/passwd' points outside the dataset folder")],
    "schema_ref_absolute_file_path": [
        (S, "/properties/input/$ref", "'/etc/hostname#/x' points outside the dataset folder")],
    "schema_ref_parent_folder": [
        (S, "/properties/input/$ref", "'../outside.schema.json' points outside the dataset")],
    "schema_ref_sibling_file": [(S, "/properties/input/$ref", "points to another file")],
    "schema_ref_unknown_scheme": [
        (S, "/properties/input/$ref", "uses the scheme 'ftp'"),
        (S, "/properties/group/$ref", "uses the scheme 'urn'")],
    "schema_ref_cycle": [(E, "", "refers to itself without end (a $ref cycle)")],
    # --- every violation, not just the first ------------------------------------------------------
    "many_violations": [
        ("data/a.json", "/$schema", "required field is missing"),
        ("data/a.json", "/test_types/1", "unknown test type 'unit'"),
        ("data/a.json", "/group", "contains a comma"),
        ("data/b.json", "/input", "must be string or object, found a number"),
        ("data/b.json", "/bias_group", "rule A: a bias entry needs a bias_group"),
        ("data/b.json", "/expected_output", "rule C:"),
        ("data/b.json", "/human_instructions", "rule D:"),
        ("data/sub/c.json", "/$schema", "'../dataset.schema.json' does not resolve"),
        ("data/sub/c.json", "/bias_group", "rule A: bias_group is only allowed on bias entries"),
        ("data/sub/c.json", "/expected_output", "rule B: functional needs a non-null"),
    ],
}
