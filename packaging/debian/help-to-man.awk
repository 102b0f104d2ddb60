# help-to-man.awk: "larder --help" (from its second line) to the groff of
# larder(1)'s OPTIONS section. Three kinds of lines:
#   "-p, --port=<num>   description"      an option: .TP, the option words in
#                                          bold (<arg> in italics), then text
#   "   - name:   description"             a -o sub-option: indented .TP
#   "                   more text"         continues the description above
function esc(s) {
    gsub(/\\/, "\\e", s)
    gsub(/-/, "\\-", s)
    return s
}
function text(s) {
    s = esc(s)
    if (s ~ /^[.']/) s = "\\&" s
    return s
}
# an option word: -x / -x, / --long / --long=<arg> / <arg>
function optword(w,    head, arg, comma) {
    comma = ""
    if (w ~ /,$/) { comma = ","; w = substr(w, 1, length(w) - 1) }
    if (w ~ /^<.*>$/) return "\\fI" esc(w) "\\fR" comma
    if (match(w, /=<.*>$/)) {
        head = substr(w, 1, RSTART - 1); arg = substr(w, RSTART + 1)
        return "\\fB" esc(head) "\\fR=\\fI" esc(arg) "\\fR" comma
    }
    return "\\fB" esc(w) "\\fR" comma
}
NR == 1 { next }
/^   - [a-z_]+:/ {
    if (!insub) { print ".RS"; insub = 1 }
    name = $2; sub(/:$/, "", name)
    print ".TP"
    print "\\fB" esc(name) "\\fR"
    line = $0; sub(/^   - [a-z_]+:[ ]*/, "", line)
    if (line != "") print text(line)
    next
}
/^-/ {
    if (insub) { print ".RE"; insub = 0 }
    n = split($0, w, /[ ]+/)
    head = ""; i = 1
    while (i <= n && (w[i] ~ /^-/ || w[i] ~ /^<.*>,?$/)) {
        head = head (head == "" ? "" : " ") optword(w[i]); i++
    }
    desc = ""
    for (; i <= n; i++) desc = desc (desc == "" ? "" : " ") w[i]
    print ".TP"
    print head
    if (desc != "") print text(desc)
    next
}
/^[ ]+[^ ]/ {
    line = $0; sub(/^[ ]+/, "", line)
    print text(line)
    next
}
END { if (insub) print ".RE" }
