"""C sources of prmg's host emulator of the CANN toolkit (built with ``make -C <here> OUT=<dir>``)."""
