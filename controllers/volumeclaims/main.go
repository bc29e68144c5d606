// Command volumeclaims is the jobset-addons volumeclaims controller.
package main

import "github.com/jobset-addons/jobset-addons/pkg/addon"

func main() {
	addon.Main(addon.Options{Name: "volumeclaims"})
}
