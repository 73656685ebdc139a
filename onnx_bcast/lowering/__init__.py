"""The lowering engine: survey, declare, gather facts, bind, emit and splice; the rule contract; its speed-ups."""
