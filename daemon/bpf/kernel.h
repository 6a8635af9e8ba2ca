/* kernel.h: stub */
