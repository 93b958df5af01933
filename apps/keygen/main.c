/*
 * actorc-keygen: make a CURVE key pair for a node, in ZeroMQ's Z85 form.
 *
 *   actorc-keygen NAME      writes NAME.pub (the public key) and NAME.key
 *                           (the secret key, readable by its owner only)
 *
 * Read them back with ac_node_curve_read_key. Refuses to overwrite.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <actorc.h>

static int write_key(const char *path, const char *key, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0) {
        fprintf(stderr, "actorc-keygen: cannot create %s: %s\n", path, strerror(errno));
        return -1;
    }
    char line[48];
    int n = snprintf(line, sizeof line, "%s\n", key);
    int ok = write(fd, line, (size_t)n) == n;
    if (close(fd) != 0 || !ok) {
        fprintf(stderr, "actorc-keygen: cannot write %s\n", path);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: actorc-keygen NAME   (writes NAME.pub and NAME.key)\n");
        return 2;
    }
    char pub[41], sec[41], pub_path[4096], sec_path[4096];
    if (ac_node_curve_keypair(pub, sec) != AC_OK) {
        fprintf(stderr, "actorc-keygen: %s\n", ac_last_error());
        return 1;
    }
    snprintf(pub_path, sizeof pub_path, "%s.pub", argv[1]);
    snprintf(sec_path, sizeof sec_path, "%s.key", argv[1]);
    if (write_key(sec_path, sec, 0600) != 0)
        return 1;
    if (write_key(pub_path, pub, 0644) != 0) {
        unlink(sec_path);
        return 1;
    }
    printf("%s\n", pub);
    return 0;
}
