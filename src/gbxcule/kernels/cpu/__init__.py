"""The SM83 CPU: its registers in locals (``cpu_regs``), the fetch from ROM words, the
general decode by phases (``cpu``), the fast paths by opcode field (``cpu_fast``), the
instruction loops composing them (``cpu_step``), interrupt dispatch, and a bare
instruction loop with no timing for testing the CPU alone (``run_cpu``)."""
