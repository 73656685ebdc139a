"""Models as files and graphs: walking them, their shape claims, external data, safe reading and writing."""
