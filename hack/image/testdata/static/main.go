// Command static is the smallest static executable: TestArchive puts it in
// an image in place of the runtime's binaries.
package main

func main() {}
