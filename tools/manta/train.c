#include <stdio.h>
#include "cmd.h"
int cmd_train(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "not yet\n"); return 1; }
