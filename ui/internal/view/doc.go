// Package view turns the objects of the store into what a page shows: plain values, built by
// pure functions that read nothing but their arguments, so each is table-tested without a
// cluster. Templates only lay these values out.
package view
