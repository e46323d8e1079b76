"""``medexam`` commands for this activity (registered on import)."""
