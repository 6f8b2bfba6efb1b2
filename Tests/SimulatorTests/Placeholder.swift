// Replaced by the simulator's unit tests.
