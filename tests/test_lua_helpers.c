/* test_lua_helpers.c - the helpers the scripts of lua/ each carry are one
 * definition written several times, and must stay one.
 *
 * A standalone script runs alone under EVAL (SPEC §4), so parse_int,
 * ceildiv, parse_rate_milli and the JOB constant are copied into every
 * script that needs them, and the model sections spliced into claim.lua
 * and ack.lua bring their copies along. The rule checked here: a local
 * function (or an upper-case constant) of a given name reads the same in
 * every embedded script. A helper a script needs differently gets a name
 * of its own (shaping_parse_args, not parse_args). No Redis, no files:
 * the embedded sources are compared as text. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "redis/lua_scripts.h"

#define MAX_DEFINITIONS 1024
#define NAME_MAX_LEN 64

/* One top-level definition: a "local function NAME" up to its closing
 * "end" at the start of a line (or on the same line), or a constant
 * "local NAME = value" whose value is compared without its comment. */
typedef struct definition {
    const char *script; /* the embedded script's name */
    int line;           /* 1-based, in that script */
    char name[NAME_MAX_LEN];
    const char *text;
    size_t len;
} definition;

static size_t line_length(const char *line)
{
    const char *newline = strchr(line, '\n');
    return newline ? (size_t)(newline - line) : strlen(line);
}

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Copies the identifier at s into name; returns its length (0: none). */
static size_t identifier(const char *s, char name[NAME_MAX_LEN])
{
    size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
    if (n == 0 || n >= NAME_MAX_LEN)
        return 0;
    memcpy(name, s, n);
    name[n] = '\0';
    return n;
}

static bool upper_case(const char *name)
{
    return strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == strlen(name);
}

/* The definition that starts at `line` (len bytes, then '\n' or NUL), if
 * one does: fills d and returns true. Fails the test on a function whose
 * "end" is not found (the scan would be wrong). */
static bool definition_at(const char *line, size_t len, definition *d)
{
    if (starts_with(line, "local function ")) {
        cr_assert(identifier(line + strlen("local function "), d->name), "%s:%d: no name",
                  d->script, d->line);
        const char *end = line;
        size_t end_len = len;
        bool one_line = len >= 4 && strncmp(line + len - 4, " end", 4) == 0;
        while (!one_line && !(end_len == 3 && starts_with(end, "end"))) {
            cr_assert(end[end_len], "%s:%d: %s has no \"end\" at the start of a line",
                      d->script, d->line, d->name);
            end += end_len + 1;
            end_len = line_length(end);
        }
        d->len = (size_t)(end + end_len - line);
        return true;
    }
    if (!starts_with(line, "local "))
        return false;
    size_t name_len = identifier(line + strlen("local "), d->name);
    if (name_len == 0 || !upper_case(d->name) ||
        !starts_with(line + strlen("local ") + name_len, " = "))
        return false;
    const char *comment = strstr(line, " --");
    d->len = comment && comment < line + len ? (size_t)(comment - line) : len;
    return true;
}

/* Appends the definitions of one script to defs[*count]. */
static void scan_script(const char *script, const char *source, definition *defs, size_t *count)
{
    int line_no = 1;
    for (const char *line = source; *line; line_no++) {
        size_t len = line_length(line);
        definition d = {.script = script, .line = line_no, .text = line};
        if (definition_at(line, len, &d)) {
            cr_assert_lt(*count, MAX_DEFINITIONS);
            defs[(*count)++] = d;
        }
        line += line[len] ? len + 1 : len;
    }
}

/* The first two definitions of one name that differ, as indexes into
 * defs; false when every name reads the same wherever it is defined. */
static bool first_difference(const definition *defs, size_t count, size_t *a, size_t *b)
{
    for (size_t i = 0; i < count; i++) {
        for (size_t j = i + 1; j < count; j++) {
            if (strcmp(defs[i].name, defs[j].name) != 0)
                continue;
            if (defs[i].len != defs[j].len || memcmp(defs[i].text, defs[j].text, defs[i].len)) {
                *a = i;
                *b = j;
                return true;
            }
        }
    }
    return false;
}

/* How many scripts define `name`. */
static int scripts_defining(const definition *defs, size_t count, const char *name)
{
    int n = 0;
    const char *last_script = NULL;
    for (size_t i = 0; i < count; i++) {
        if (strcmp(defs[i].name, name) == 0 && defs[i].script != last_script) {
            n++;
            last_script = defs[i].script;
        }
    }
    return n;
}

static size_t scan_embedded(definition *defs)
{
    size_t count = 0;
    for (size_t i = 0; i < sl_lua_script_count; i++)
        scan_script(sl_lua_scripts[i].name, sl_lua_scripts[i].source, defs, &count);
    return count;
}

Test(lua_helpers, one_name_reads_the_same_in_every_script)
{
    definition defs[MAX_DEFINITIONS];
    size_t count = scan_embedded(defs), a, b;
    if (first_difference(defs, count, &a, &b))
        cr_assert_fail("%s differs between %s (line %d) and %s (line %d): a shared helper "
                       "must be copied unchanged; one a script needs differently gets a name "
                       "of its own.\n--- %s\n%.*s\n--- %s\n%.*s",
                       defs[a].name, defs[a].script, defs[a].line, defs[b].script, defs[b].line,
                       defs[a].script, (int)defs[a].len, defs[a].text, defs[b].script,
                       (int)defs[b].len, defs[b].text);
}

/* The scan sees the helpers it exists for, so the test above checks them. */
Test(lua_helpers, the_shared_helpers_are_seen)
{
    definition defs[MAX_DEFINITIONS];
    size_t count = scan_embedded(defs);
    cr_assert_geq(scripts_defining(defs, count, "parse_int"), 6);
    cr_assert_geq(scripts_defining(defs, count, "ceildiv"), 4);
    cr_assert_geq(scripts_defining(defs, count, "parse_rate_milli"), 3);
    cr_assert_geq(scripts_defining(defs, count, "JOB"), 3);
    cr_assert_geq(scripts_defining(defs, count, "shaping_decide"), 3, "shaping, claim, ack");
}

Test(lua_helpers, a_changed_copy_is_found)
{
    static const char one[] = "-- a\n"
                              "local JOB = 1000000000 -- one job\n"
                              "local function fmt(n) return string.format('%d', n) end\n"
                              "local function ceildiv(a, b)\n"
                              "  return math.floor((a + b - 1) / b)\n"
                              "end\n"
                              "local args, err = parse()\n";
    static const char same[] = "local function ceildiv(a, b)\n"
                               "  return math.floor((a + b - 1) / b)\n"
                               "end\n"
                               "local JOB = 1000000000 -- one token, another comment\n";
    static const char changed[] = "local function ceildiv(a, b)\n"
                                  "  return math.ceil(a / b)\n"
                                  "end\n";
    definition found[16];
    size_t count = 0, a, b;
    scan_script("one", one, found, &count);
    cr_assert_eq(count, 3, "JOB, fmt, ceildiv; not the locals of the main chunk");
    cr_assert_str_eq(found[1].name, "fmt");
    cr_assert_eq(found[1].len, strlen("local function fmt(n) return string.format('%d', n) end"));
    cr_assert_eq(found[2].line, 4);
    scan_script("same", same, found, &count);
    cr_assert_not(first_difference(found, count, &a, &b), "a comment is not the constant");
    scan_script("changed", changed, found, &count);
    cr_assert(first_difference(found, count, &a, &b));
    cr_assert_str_eq(found[a].name, "ceildiv");
    cr_assert_str_eq(found[b].script, "changed");
}
