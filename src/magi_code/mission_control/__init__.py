"""Mission Control: the terminal face (`magi-code`, `magi-code --prompt TEXT`)."""
