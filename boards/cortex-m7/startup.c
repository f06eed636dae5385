/* Cortex-M7 startup: the vector table (initial stack pointer, reset and fault handlers), and the
 * reset handler, which enables the FPU, copies .data from flash, clears .bss, paints the stack
 * below itself with MCU_STACK_PAINT (for mcu_stack_used()) and calls main(). */
#include <stdint.h>

#include "mcu.h"

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _sstack, _estack;
int main(void);
void Reset_Handler(void);
void Default_Handler(void);

/* Cortex-M vector table: the stack pointer, then the system exceptions (16 entries in all); the
 * peripheral interrupts of a real part follow and belong to its vendor's startup file. */
typedef struct vector_table {
    uint32_t *initial_sp;
    void (*handler[15])(void);
} vector_table;

__attribute__((section(".isr_vector"), used)) const vector_table vectors = {
    &_estack,
    {
        Reset_Handler,   /* reset */
        Default_Handler, /* NMI */
        Default_Handler, /* hard fault */
        Default_Handler, /* memory management fault */
        Default_Handler, /* bus fault */
        Default_Handler, /* usage fault */
        0, 0, 0, 0,      /* reserved */
        Default_Handler, /* SVCall */
        Default_Handler, /* debug monitor */
        0,               /* reserved */
        Default_Handler, /* PendSV */
        Default_Handler, /* SysTick */
    },
};

void Default_Handler(void)
{
    for (;;) {
    }
}

void Reset_Handler(void)
{
    /* CP10 and CP11 full access (SCB->CPACR), before any floating-point instruction runs. */
    volatile uint32_t *cpacr = (volatile uint32_t *)0xE000ED88u;
    *cpacr |= 0xFu << 20;
    __asm__ volatile("dsb\n\tisb" ::: "memory");

    uint32_t *src = &_sidata;
    for (uint32_t *dst = &_sdata; dst < &_edata;)
        *dst++ = *src++;
    for (uint32_t *dst = &_sbss; dst < &_ebss;)
        *dst++ = 0;
    /* the stack below this frame, less 64 bytes of margin for the calls below */
    uint32_t *sp;
    __asm__ volatile("mov %0, sp" : "=r"(sp));
    for (uint32_t *dst = &_sstack; dst < sp - 16;)
        *dst++ = MCU_STACK_PAINT;
    (void)main();
    for (;;) {
    }
}

uint32_t mcu_stack_used(void)
{
    const uint32_t *p = &_sstack;
    while (p < &_estack && *p == MCU_STACK_PAINT)
        p++;
    return (uint32_t)((const uint8_t *)&_estack - (const uint8_t *)p);
}
