/* Strings kept as redis keeps them: each made with its usable size asked (sdsnewlen), then
 * shrunk to its length when the allocator gave more than it holds (sdsRemoveFreeSpace).
 *
 *   shrink_program exact|slack BLOCKS LEN
 *     exact: malloc(LEN), realloc'd to LEN when malloc_usable_size says there is room over
 *            (under glibc a LEN of 8 mod 16 has none: only a block whose usable size lies
 *            is shrunk);
 *     slack: malloc(2 * LEN), always realloc'd down to LEN.
 *   Prints "KEPT <bytes>" (the bytes asked for that stay live), waits for a line (or the end
 *   of its input), frees all, exits. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  const int slack = strcmp(argv[1], "slack") == 0;
  const size_t blocks = strtoul(argv[2], NULL, 10), len = strtoul(argv[3], NULL, 10);
  char** kept = malloc(blocks * sizeof *kept);
  if (kept == NULL) return 1;
  for (size_t i = 0; i < blocks; ++i) {
    char* s = malloc(slack ? 2 * len : len);
    if (s == NULL) return 1;
    const size_t usable = malloc_usable_size(s);
    memset(s, 'x', usable); /* the room the allocator says the block has is the program's */
    if (usable > len) s = realloc(s, len);
    if (s == NULL) return 1;
    kept[i] = s;
  }
  printf("KEPT %zu\n", blocks * len);
  fflush(stdout);
  char line[16];
  (void)!fgets(line, sizeof line, stdin); /* a line, or the end of the input */
  for (size_t i = 0; i < blocks; ++i) free(kept[i]);
  free(kept);
  return 0;
}
