"""PodMigrationJobs: the MigrationController's jobs, limits, reconciler and where it keeps them."""
