/* What the Cortex-M7 image's startup code (startup.c) gives its main(). */
#ifndef MANTA_BOARDS_MCU_H
#define MANTA_BOARDS_MCU_H

#include <stdint.h>

/** The word the reset handler fills the unused stack with. */
#define MCU_STACK_PAINT 0xa5a5a5a5u

/** Bytes of the stack used so far at the deepest: from its top down to the lowest word that no
 *  longer holds MCU_STACK_PAINT (the reset handler's own frame included). */
uint32_t mcu_stack_used(void);

#endif
