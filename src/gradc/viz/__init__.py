"""Pictures of programs: the HTML viewer (gradc view) and Graphviz DOT (gradc show --dot)."""
