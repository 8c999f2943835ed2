# not a distribution
