/* A hosted C bot on the stdio line protocol (docs/STDIO.md): one JSON turn per line on
 * stdin, one action per line on stdout. The bridge writes "legal_actions" before the
 * observation, so the first list after that key is the legal actions (sorted, "pass"
 * last). It plays the first legal action that is not "pass", else "pass". */
#include <stdio.h>
#include <string.h>

static char line[1 << 20];

int main(void) {
    while (fgets(line, sizeof line, stdin) != NULL) {
        if (strncmp(line, "{\"type\":\"turn\"", 14) != 0) continue;
        const char *list = strstr(line, "\"legal_actions\":[");
        char action[64] = "pass";
        if (list != NULL) {
            const char *p = list + strlen("\"legal_actions\":[");
            while (*p == '"') {
                const char *end = strchr(p + 1, '"');
                if (end == NULL || end - p - 1 >= (long)sizeof action) break;
                if (strncmp(p + 1, "pass", 4) != 0) {
                    memcpy(action, p + 1, (size_t)(end - p - 1));
                    action[end - p - 1] = '\0';
                    break;
                }
                p = end + 1;
                if (*p == ',') p++;
            }
        }
        printf("%s\n", action);
        fflush(stdout);
    }
    return 0;
}
