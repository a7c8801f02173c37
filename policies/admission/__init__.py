"""The admission rules: what a plugin receives (`plugin`), ClusterColocationProfiles, and the
mutating and validating plugins of every webhook path, in Koordinator's order. Pure: no I/O."""
