/* test_url_policy.c - what a job may name as "path" or "url" (job/url_policy.h),
 * on its own: the text rules, dot segments in every spelling, encoded
 * separators, and allow_urls prefixes at a boundary. Pure. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "job/url_policy.h"

#define DOTS "must not contain '.' or '..' segments"
#define ENCODED "must not contain an encoded '/' or '\\' in the path"
#define TEXT "must be printable ASCII without spaces (percent-encode the rest)"
#define NO_PREFIX "matches no allow_urls prefix"

static void path_is(const char *path, const char *why)
{
    const char *got = sl_job_path_error(path);
    if (!why)
        cr_assert_null(got, "%s: %s", path, got);
    else
        cr_assert(got && strcmp(got, why) == 0, "%s: \"%s\", expected \"%s\"", path,
                  got ? got : "(allowed)", why);
}

static const char *const allow[] = {"https://a.example/v1", "http://b.example/hooks/",
                                    "http://q.example/search?"};
#define ALLOW_COUNT (sizeof allow / sizeof allow[0])

static void url_is(const char *url, const char *why)
{
    const char *got = sl_job_url_error(url, allow, ALLOW_COUNT);
    if (!why)
        cr_assert_null(got, "%s: %s", url, got);
    else
        cr_assert(got && strcmp(got, why) == 0, "%s: \"%s\", expected \"%s\"", url,
                  got ? got : "(allowed)", why);
}

Test(url_policy, a_path_starts_with_one_slash)
{
    path_is("/", NULL);
    path_is("/a/b?c=d", NULL);
    path_is("", "must start with '/'");
    path_is("a/b", "must start with '/'");
    path_is("?x", "must start with '/'");
    path_is("//evil.example/x", "must not start with '//'");
    path_is("/a//b", NULL); /* an empty segment is no host */
}

Test(url_policy, dot_segments_in_any_spelling_before_the_query)
{
    path_is("/.", DOTS);
    path_is("/a/..", DOTS);
    path_is("/a/./b", DOTS);
    path_is("/a/%2e/b", DOTS);
    path_is("/a/%2E%2e/b", DOTS);
    path_is("/a/.%2E/b", DOTS);
    path_is("/a/.../b", NULL);   /* three dots are a name */
    path_is("/a/.b/c.", NULL);
    path_is("/a/%2e%2/b", NULL); /* a cut escape is no dot */
    path_is("/a?next=../b", NULL);
    path_is("/a?p=/./", NULL);
}

Test(url_policy, encoded_separators_before_the_query)
{
    path_is("/a%2fb", ENCODED);
    path_is("/a%2Fb", ENCODED);
    path_is("/a%5cb", ENCODED);
    path_is("/a%5C", ENCODED);
    path_is("/a%25%32f", NULL); /* "%2f" after one decoding, not before */
    path_is("/a?x=%2f", NULL);
}

/* Issue 13: "%00" in a job's path was accepted and sent. */
Test(url_policy, an_encoded_nul_is_refused_in_path_and_query)
{
    static const char NUL[] = "must not contain an encoded NUL (%00)";
    path_is("/a%00b", NUL);
    path_is("/a?x=%00", NUL);
    path_is("/%00", NUL);
    path_is("/a%2500", NULL); /* "%00" only after one decoding */
    path_is("/a%0", NULL);
    url_is("https://a.example/v1/x%00", NUL);
    url_is("https://a.example/v1/x?y=%00", NUL);
}

Test(url_policy, text_is_printable_ascii_without_fragment_or_backslash)
{
    path_is("/a b", TEXT);
    path_is("/a\tb", TEXT);
    path_is("/caf\xc3\xa9", TEXT);
    path_is("/a\x7f", TEXT);
    path_is("/a?q=\x01", TEXT);
    path_is("/a\\b", "must not contain '\\'");
    path_is("/a#top", "must not contain a fragment ('#')");
    path_is("/a?q=#", "must not contain a fragment ('#')");
}

Test(url_policy, a_url_matches_a_prefix_byte_for_byte_at_a_boundary)
{
    url_is("https://a.example/v1", NULL);
    url_is("https://a.example/v1/", NULL);
    url_is("https://a.example/v1/x/y", NULL);
    url_is("https://a.example/v1?x=1", NULL);
    url_is("https://a.example/v10", NO_PREFIX);
    url_is("https://a.example/v1.evil", NO_PREFIX);
    url_is("https://a.example/v", NO_PREFIX);
    url_is("https://A.example/v1", NO_PREFIX); /* no case folding of the host */
    url_is("HTTPS://a.example/v1", NO_PREFIX); /* an http(s) URL, but not the prefix */
    url_is("https://a.example:443/v1", NO_PREFIX);
    url_is("http://b.example/hooks/a", NULL);
    url_is("http://b.example/hooks", NO_PREFIX);
    url_is("http://q.example/search?q=1", NULL); /* a prefix ending in '?' */
    url_is("http://q.example/search", NO_PREFIX);
}

Test(url_policy, a_url_obeys_the_text_rules_before_any_prefix)
{
    url_is("ftp://a.example/v1", "must be an http:// or https:// URL");
    url_is("//a.example/v1", "must be an http:// or https:// URL");
    url_is("https://a.example/v1/../admin", DOTS);
    url_is("https://a.example/v1/%2e%2e/admin", DOTS);
    url_is("https://a.example/v1/a%2fb", ENCODED);
    url_is("https://a.example/v1/a b", TEXT);
    url_is("https://a.example/v1#x", "must not contain a fragment ('#')");
    /* The rules cover the path only: dots in the host and after '?' are fine. */
    url_is("https://a.example/v1?back=../x", NULL);
    url_is("http://q.example/search?%2f", NULL);
}

Test(url_policy, no_allow_urls_allows_no_url)
{
    cr_assert_str_eq(sl_job_url_error("https://a.example/v1", NULL, 0),
                     "not allowed (the tenant has no allow_urls)");
    const char *const empty[] = {""};
    cr_assert_str_eq(sl_job_url_error("https://a.example/v1", empty, 1), NO_PREFIX,
                     "an empty prefix matches nothing");
    /* The scheme is checked even when nothing could be allowed. */
    cr_assert_str_eq(sl_job_url_error("file:///etc/passwd", NULL, 0),
                     "must be an http:// or https:// URL");
}

Test(url_policy, join_drops_the_endpoints_trailing_slashes)
{
    const char *cases[][3] = {
        {"http://h/v1///", "/x", "http://h/v1/x"},
        {"http://h/v1", "/x?y", "http://h/v1/x?y"},
        {"http://h", "/", "http://h/"},
        {"", "/x", "/x"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *url = sl_job_url_join(cases[i][0], cases[i][1]);
        cr_assert_not_null(url);
        cr_assert_str_eq(url, cases[i][2]);
        free(url);
    }
}
