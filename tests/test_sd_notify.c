/* test_sd_notify.c - the service manager protocol (sd_notify.c): the pure
 * parts, then a real `sluice run` reporting READY, WATCHDOG and STOPPING
 * to a socket this test holds, as systemd would. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "daemon_process.h"
#include "redis_fixture.h"
#include "daemon/sd_notify.h"

Test(sd_notify, socket_addresses)
{
    struct sockaddr_un addr;
    socklen_t len;
    cr_assert(sl_sd_notify_address("/run/systemd/notify", &addr, &len));
    cr_assert_str_eq(addr.sun_path, "/run/systemd/notify");
    cr_assert(sl_sd_notify_address("@abstract/notify", &addr, &len));
    cr_assert_eq(addr.sun_path[0], '\0', "abstract namespace");
    cr_assert_eq(memcmp(addr.sun_path + 1, "abstract/notify", 15), 0);
    cr_assert_eq(len, offsetof(struct sockaddr_un, sun_path) + 16);
    cr_assert_not(sl_sd_notify_address(NULL, &addr, &len));
    cr_assert_not(sl_sd_notify_address("", &addr, &len));
    char huge[200];
    memset(huge, 'x', sizeof huge - 1);
    huge[sizeof huge - 1] = '\0';
    cr_assert_not(sl_sd_notify_address(huge, &addr, &len));
}

Test(sd_notify, watchdog_interval)
{
    cr_assert_eq(sl_sd_watchdog_usec("30000000", NULL, 42), 30000000);
    cr_assert_eq(sl_sd_watchdog_usec("30000000", "42", 42), 30000000);
    cr_assert_eq(sl_sd_watchdog_usec("30000000", "43", 42), 0, "meant for another process");
    cr_assert_eq(sl_sd_watchdog_usec(NULL, NULL, 42), 0);
    cr_assert_eq(sl_sd_watchdog_usec("soon", NULL, 42), 0);
    cr_assert_eq(sl_sd_watchdog_usec("-5", NULL, 42), 0);
    cr_assert_eq(sl_sd_notify("READY=1"), false, "no manager, nothing sent");
}

/* Reads datagrams for up to timeout_ms until one contains `what`. */
static bool wait_for(int fd, const char *what, int timeout_ms)
{
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        char buf[512];
        ssize_t n = recv(fd, buf, sizeof buf - 1, MSG_DONTWAIT);
        if (n > 0) {
            buf[n] = '\0';
            if (strstr(buf, what))
                return true;
            continue;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 > timeout_ms)
            return false;
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
}

Test(sd_notify, the_daemon_reports_to_the_service_manager, .timeout = 60)
{
    redis_fixture fx;
    redis_fixture_start(&fx);
    char dir[] = "/tmp/sluice-test-notify-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char socket_path[128], config[128], log[128];
    snprintf(socket_path, sizeof socket_path, "%s/notify", dir);
    snprintf(config, sizeof config, "%s/sluice.json", dir);
    snprintf(log, sizeof log, "%s/sluice.log", dir);
    FILE *f = fopen(config, "w");
    cr_assert_not_null(f);
    fprintf(f, "{\"redis\": \"redis://127.0.0.1:%d/0\", \"admin\": null, \"workers\": 2,"
               " \"tenants\": {\"acme\": {\"endpoint\": \"http://127.0.0.1:9/\", \"rate\": 1}}}\n",
            fx.server.port);
    fclose(f);

    int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    struct sockaddr_un addr;
    socklen_t len;
    cr_assert(sl_sd_notify_address(socket_path, &addr, &len));
    cr_assert_eq(bind(fd, (struct sockaddr *)&addr, len), 0);

    setenv("NOTIFY_SOCKET", socket_path, 1);
    setenv("WATCHDOG_USEC", "1000000", 1); /* petted every 0.5 s */
    daemon_process d = {0};
    char err[256];
    cr_assert(daemon_start(&d, config, log, NULL, err, sizeof err), "%s", err);
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");

    cr_assert(wait_for(fd, "READY=1", 5000), "no READY=1");
    cr_assert(wait_for(fd, "WATCHDOG=1", 1500), "no WATCHDOG=1 within 1.5 s");
    cr_assert(wait_for(fd, "WATCHDOG=1", 1500), "the watchdog was petted only once");
    kill(d.pid, SIGTERM);
    cr_assert(wait_for(fd, "STOPPING=1", 3000), "no STOPPING=1 after SIGTERM");
    cr_assert_eq(daemon_stop(&d, SIGTERM, 10000), 0);
    close(fd);
    unlink(socket_path);
    unlink(config);
    unlink(log);
    rmdir(dir);
    redis_fixture_stop(&fx);
}
