/* json_scan.c - strict JSON validation with spans (see json_scan.h).
 *
 * A recursive descent over the bytes, each byte looked at a bounded number
 * of times (the depth bound keeps the recursion and the stack small). */
#include "job/json_scan.h"

#include <string.h>

typedef struct scanner {
    const char *s;
    size_t len, pos;
    sl_json_scan *out;
    /* Where we are, for the first "\u0000": the member index at depth 0
     * and 1, and whether we are inside a top-level key. */
    size_t cur_top, cur_inner;
    bool in_top_key;
} scanner;

static bool scan_value(scanner *sc, int depth);

/* Keeps the first error only: it is the one nearest its cause. */
static bool scan_error(scanner *sc, const char *what)
{
    if (!sc->out->error)
        sc->out->error = what;
    return false;
}

static void skip_ws(scanner *sc)
{
    while (sc->pos < sc->len) {
        char ch = sc->s[sc->pos];
        if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r')
            break;
        sc->pos++;
    }
}

static int peek(const scanner *sc)
{
    return sc->pos < sc->len ? (unsigned char)sc->s[sc->pos] : -1;
}

static bool is_hex(int ch)
{
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
}

/* Records the first "\u0000" with where it is: cJSON would cut that
 * string short, so the caller refuses it and names the key. */
static void note_nul(scanner *sc)
{
    sl_json_scan *out = sc->out;
    if (out->nul_seen)
        return;
    out->nul_seen = true;
    out->nul_in_top_key = sc->in_top_key;
    out->nul_top = sc->cur_top;
    out->nul_inner = sc->cur_inner;
}

static bool scan_string(scanner *sc)
{
    sc->pos++; /* opening quote */
    while (sc->pos < sc->len) {
        unsigned char ch = (unsigned char)sc->s[sc->pos];
        if (ch == '"') {
            sc->pos++;
            return true;
        }
        if (ch < 0x20)
            return scan_error(sc, "unescaped control character in a string");
        if (ch != '\\') {
            sc->pos++;
            continue;
        }
        if (sc->pos + 1 >= sc->len)
            break;
        char e = sc->s[sc->pos + 1];
        if (e == 'u') {
            if (sc->pos + 6 > sc->len)
                break;
            for (size_t k = 2; k < 6; k++)
                if (!is_hex((unsigned char)sc->s[sc->pos + k]))
                    return scan_error(sc, "bad \\u escape");
            if (memcmp(sc->s + sc->pos + 2, "0000", 4) == 0)
                note_nul(sc);
            sc->pos += 6;
        } else if (e != '\0' && strchr("\"\\/bfnrt", e)) {
            sc->pos += 2;
        } else {
            return scan_error(sc, "bad escape in a string");
        }
    }
    return scan_error(sc, "unterminated string");
}

static size_t count_digits(const scanner *sc)
{
    size_t n = 0;
    while (sc->pos + n < sc->len && sc->s[sc->pos + n] >= '0' && sc->s[sc->pos + n] <= '9')
        n++;
    return n;
}

/* number = [ "-" ] ( "0" / 1-9 *DIGIT ) [ "." 1*DIGIT ] [ e [+-] 1*DIGIT ] */
static bool scan_number(scanner *sc)
{
    if (peek(sc) == '-')
        sc->pos++;
    size_t n = count_digits(sc);
    if (n == 0)
        return scan_error(sc, "bad number");
    if (n > 1 && sc->s[sc->pos] == '0')
        return scan_error(sc, "number with a leading zero");
    sc->pos += n;
    if (peek(sc) == '.') {
        sc->pos++;
        if ((n = count_digits(sc)) == 0)
            return scan_error(sc, "bad number");
        sc->pos += n;
    }
    if (peek(sc) == 'e' || peek(sc) == 'E') {
        sc->pos++;
        if (peek(sc) == '+' || peek(sc) == '-')
            sc->pos++;
        if ((n = count_digits(sc)) == 0)
            return scan_error(sc, "bad number");
        sc->pos += n;
    }
    return true;
}

static bool scan_literal(scanner *sc, const char *word)
{
    size_t n = strlen(word);
    if (sc->len - sc->pos < n || memcmp(sc->s + sc->pos, word, n) != 0)
        return scan_error(sc, "unexpected character");
    sc->pos += n;
    return true;
}

/* Object or array; depth 0 is the text's own value, whose member spans
 * are recorded. */
static bool scan_container(scanner *sc, int depth)
{
    bool object = sc->s[sc->pos] == '{';
    char close = object ? '}' : ']';
    if (depth >= SL_JSON_DEPTH_MAX)
        return scan_error(sc, "nested too deeply");
    sc->pos++;
    skip_ws(sc);
    if (peek(sc) == close) {
        sc->pos++;
        return true;
    }
    for (size_t index = 0;; index++) {
        skip_ws(sc);
        if (depth == 0)
            sc->cur_top = index;
        else if (depth == 1)
            sc->cur_inner = index;
        if (object) {
            if (peek(sc) != '"')
                return scan_error(sc, "expected a string key");
            sc->in_top_key = depth == 0;
            bool ok = scan_string(sc);
            sc->in_top_key = false;
            if (!ok)
                return false;
            skip_ws(sc);
            if (peek(sc) != ':')
                return scan_error(sc, "expected ':'");
            sc->pos++;
            skip_ws(sc);
        }
        size_t start = sc->pos;
        if (!scan_value(sc, depth + 1))
            return false;
        if (object && depth == 0) {
            sl_json_scan *out = sc->out;
            if (out->members < SL_JSON_SPANS_MAX)
                out->values[out->members] = (sl_json_span){start, sc->pos};
            out->members++;
        }
        skip_ws(sc);
        int ch = peek(sc);
        if (ch == close) {
            sc->pos++;
            return true;
        }
        if (ch != ',')
            return scan_error(sc, object ? "expected ',' or '}'" : "expected ',' or ']'");
        sc->pos++;
    }
}

static bool scan_value(scanner *sc, int depth)
{
    switch (peek(sc)) {
    case '{':
    case '[':
        return scan_container(sc, depth);
    case '"':
        return scan_string(sc);
    case 't':
        return scan_literal(sc, "true");
    case 'f':
        return scan_literal(sc, "false");
    case 'n':
        return scan_literal(sc, "null");
    case -1:
        return scan_error(sc, "unexpected end");
    default:
        if (peek(sc) == '-' || (peek(sc) >= '0' && peek(sc) <= '9'))
            return scan_number(sc);
        return scan_error(sc, "unexpected character");
    }
}

bool sl_json_scan_text(const char *text, size_t len, sl_json_scan *out)
{
    *out = (sl_json_scan){0};
    scanner sc = {.s = text, .len = len, .out = out};
    skip_ws(&sc);
    out->first = sc.pos;
    if (scan_value(&sc, 0)) {
        skip_ws(&sc);
        if (sc.pos != len)
            scan_error(&sc, "trailing data after the JSON value");
    }
    if (out->error)
        out->error_at = sc.pos;
    return out->error == NULL;
}
