"""The local rehearsals of the release and of the GPU check, the workflow checks, and the package
index they and the tests share."""
