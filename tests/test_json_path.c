/* test_json_path.c - reading JSON field by field with paths: how paths
 * are written, and the exact message of each kind of wrong value. */
#include <criterion/criterion.h>
#include <string.h>

#include "config/json_path.h"

/* ---- fixture: one parsed object and a reader ------------------------ */

typedef struct fixture {
    cJSON *root;
    sl_errors errors;
    sl_jpath_reader r;
} fixture;

static void setup(fixture *f, const char *json)
{
    f->root = cJSON_Parse(json);
    cr_assert_not_null(f->root, "bad test JSON: %s", json);
    sl_errors_init(&f->errors);
    f->r = (sl_jpath_reader){.errors = &f->errors, .oom = false};
}

static void teardown(fixture *f)
{
    cJSON_Delete(f->root);
    sl_errors_clear(&f->errors);
}

static void assert_errors(const fixture *f, size_t n, const char *const *expected)
{
    cr_assert_eq(f->errors.count, n, "got %zu errors, first: %s", f->errors.count,
                 f->errors.count ? f->errors.items[0] : "(none)");
    for (size_t i = 0; i < n; i++)
        cr_assert_str_eq(f->errors.items[i], expected[i]);
    cr_assert_not(f->r.oom);
}

static void assert_one_error(const fixture *f, const char *expected)
{
    assert_errors(f, 1, &expected);
}

/* ---- paths ------------------------------------------------------------ */

Test(paths, plain_keys_are_dotted_and_odd_ones_bracketed)
{
    char p[SL_JPATH_LEN];
    sl_jpath_key(p, sizeof p, "", "tenants");
    cr_assert_str_eq(p, "tenants");
    sl_jpath_key(p, sizeof p, "tenants", "acme-1_*");
    cr_assert_str_eq(p, "tenants.acme-1_*");
    sl_jpath_key(p, sizeof p, "tenants", "a.b");
    cr_assert_str_eq(p, "tenants[\"a.b\"]");
    sl_jpath_key(p, sizeof p, "t", "");
    cr_assert_str_eq(p, "t[\"\"]");
    sl_jpath_key(p, sizeof p, "t", "q\"\\\n\xc3");
    cr_assert_str_eq(p, "t[\"q\\\"\\\\\\x0a\\xc3\"]");
    sl_jpath_index(p, sizeof p, "tenants.a.limits", 3);
    cr_assert_str_eq(p, "tenants.a.limits[3]");
}

Test(paths, long_keys_and_paths_are_cut_visibly)
{
    char key[300];
    memset(key, 'k', sizeof key - 1);
    key[sizeof key - 1] = '\0';
    char p[SL_JPATH_LEN];
    /* Too long to dot: bracketed, shown up to SL_JPATH_SHOWN_MAX. */
    sl_jpath_key(p, sizeof p, "t", key);
    cr_assert_eq(strlen(p), strlen("t[\"") + SL_JPATH_SHOWN_MAX + 3 + strlen("\"]"));
    cr_assert_str_eq(p + strlen(p) - 5, "...\"]");

    char small[16];
    sl_jpath_key(small, sizeof small, "parent.parent", "child");
    cr_assert_eq(strlen(small), sizeof small - 1);
    cr_assert_str_eq(small + strlen(small) - 3, "...");
}

/* ---- structure ---------------------------------------------------------- */

Test(structure, unknown_and_duplicate_keys)
{
    fixture f;
    setup(&f, "{\"a\": 1, \"b\": 2, \"x y\": 3, \"a\": 4, \"b\": 5, \"a\": 6}");
    const char *const known[] = {"a", "b", NULL};
    sl_jpath_check_unknown(&f.r, f.root, "top", known);
    sl_jpath_check_duplicates(&f.r, f.root, "top");
    const char *const want[] = {"top[\"x y\"]: unknown key", "top.a: duplicate key",
                                "top.a: duplicate key", "top.b: duplicate key"};
    assert_errors(&f, 4, want);
    teardown(&f);
}

Test(structure, required_objects_and_arrays)
{
    fixture f;
    setup(&f, "{\"o\": {}, \"n\": 5, \"arr\": [1, 2], \"empty\": [], \"s\": \"x\"}");
    char path[SL_JPATH_LEN];
    sl_jpath_status st;
    cr_assert_not_null(sl_jpath_object(&f.r, f.root, "p", "o", path, sizeof path, &st));
    cr_assert_eq(st, SL_JPATH_OK);
    cr_assert_str_eq(path, "p.o");
    cr_assert_null(sl_jpath_object(&f.r, f.root, "p", "missing", path, sizeof path, &st));
    cr_assert_eq(st, SL_JPATH_ABSENT);
    sl_jpath_require(&f.r, st, "p", "missing");
    sl_jpath_require(&f.r, SL_JPATH_OK, "p", "o");
    cr_assert_null(sl_jpath_object(&f.r, f.root, "p", "n", path, sizeof path, &st));
    cr_assert_eq(st, SL_JPATH_BAD);

    void *items = NULL;
    const cJSON *arr =
        sl_jpath_array(&f.r, f.root, "p", "arr", "a list", sizeof(int), path, &items);
    cr_assert_not_null(arr);
    cr_assert_not_null(items);
    cr_assert_eq(((int *)items)[1], 0, "zeroed");
    free(items);
    items = NULL;
    cr_assert_null(sl_jpath_array(&f.r, f.root, "p", "empty", "a list", 1, path, &items));
    cr_assert_null(items);
    cr_assert_null(sl_jpath_array(&f.r, f.root, "p", "s", "a list", 1, path, &items));

    const char *const want[] = {"p.missing: is required", "p.n: must be an object, not a number",
                                "p.s: must be a list, not a string"};
    assert_errors(&f, 3, want);
    teardown(&f);
}

/* ---- scalars ------------------------------------------------------------ */

Test(scalars, strings)
{
    fixture f;
    setup(&f, "{\"s\": \"v\", \"n\": null}");
    const char *s = NULL;
    cr_assert_eq(sl_jpath_string(&f.r, f.root, "", "s", &s), SL_JPATH_OK);
    cr_assert_str_eq(s, "v");
    cr_assert_eq(sl_jpath_string(&f.r, f.root, "", "absent", &s), SL_JPATH_ABSENT);
    cr_assert_eq(sl_jpath_string(&f.r, f.root, "", "n", &s), SL_JPATH_BAD);
    cr_assert_str_eq(s, "v", "untouched");
    assert_one_error(&f, "n: must be a string, not null");
    teardown(&f);
}

Test(scalars, integers_within_bounds)
{
    fixture f;
    setup(&f, "{\"lo\": 1, \"hi\": 10, \"below\": 0, \"above\": 11, \"frac\": 2.5,"
              "\"str\": \"3\", \"huge\": 1e300}");
    int64_t v = -1;
    cr_assert_eq(sl_jpath_int(&f.r, f.root, "o", "lo", 1, 10, &v), SL_JPATH_OK);
    cr_assert_eq(v, 1);
    cr_assert_eq(sl_jpath_int(&f.r, f.root, "o", "hi", 1, 10, &v), SL_JPATH_OK);
    cr_assert_eq(v, 10);
    cr_assert_eq(sl_jpath_int(&f.r, f.root, "o", "absent", 1, 10, &v), SL_JPATH_ABSENT);
    const char *bad[] = {"below", "above", "frac", "str", "huge"};
    for (size_t i = 0; i < 5; i++)
        cr_assert_eq(sl_jpath_int(&f.r, f.root, "o", bad[i], 1, 10, &v), SL_JPATH_BAD);
    cr_assert_eq(v, 10, "a bad value stores nothing");
    const char *const want[] = {"o.below: must be an integer between 1 and 10",
                                "o.above: must be an integer between 1 and 10",
                                "o.frac: must be an integer between 1 and 10",
                                "o.str: must be an integer, not a string",
                                "o.huge: must be an integer between 1 and 10"};
    assert_errors(&f, 5, want);
    teardown(&f);
}

Test(scalars, unchecked_integers_read_odd_values_as_zero)
{
    fixture f;
    setup(&f, "{\"n\": -7, \"frac\": 0.5, \"huge\": 1e20, \"b\": true}");
    int64_t v = -1;
    cr_assert_eq(sl_jpath_int_unchecked(&f.r, f.root, "", "n", &v), SL_JPATH_OK);
    cr_assert_eq(v, -7);
    cr_assert_eq(sl_jpath_int_unchecked(&f.r, f.root, "", "frac", &v), SL_JPATH_OK);
    cr_assert_eq(v, 0);
    v = -1;
    cr_assert_eq(sl_jpath_int_unchecked(&f.r, f.root, "", "huge", &v), SL_JPATH_OK);
    cr_assert_eq(v, 0);
    cr_assert_eq(sl_jpath_int_unchecked(&f.r, f.root, "", "b", &v), SL_JPATH_BAD);
    assert_one_error(&f, "b: must be an integer, not a boolean");
    teardown(&f);
}

Test(scalars, enums_list_what_they_accept)
{
    fixture f;
    setup(&f, "{\"two\": \"b\", \"bad\": \"z\\\"\\n\", \"num\": 1}");
    const char *const names[] = {"a", "b", "c", NULL};
    int v = -1;
    cr_assert_eq(sl_jpath_enum(&f.r, f.root, "e", "two", names, &v), SL_JPATH_OK);
    cr_assert_eq(v, 1);
    cr_assert_eq(sl_jpath_enum(&f.r, f.root, "e", "absent", names, &v), SL_JPATH_ABSENT);
    cr_assert_eq(sl_jpath_enum(&f.r, f.root, "e", "bad", names, &v), SL_JPATH_BAD);
    cr_assert_eq(sl_jpath_enum(&f.r, f.root, "e", "num", names, &v), SL_JPATH_BAD);
    cr_assert_eq(v, 1);
    const char *const want[] = {"e.bad: must be \"a\", \"b\" or \"c\", not \"z\\\"\\x0a\"",
                                "e.num: must be a string, not a number"};
    assert_errors(&f, 2, want);
    teardown(&f);
}

Test(scalars, type_names)
{
    fixture f;
    setup(&f, "[null, true, 1, \"s\", [], {}]");
    const char *want[] = {"null", "a boolean", "a number", "a string", "an array", "an object"};
    for (int i = 0; i < 6; i++)
        cr_assert_str_eq(sl_jpath_type(cJSON_GetArrayItem(f.root, i)), want[i]);
    teardown(&f);
}
