"""APIs of other memory libraries over memvault, so switching is one import."""
