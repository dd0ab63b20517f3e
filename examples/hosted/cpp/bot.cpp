// A hosted C++ bot on the stdio line protocol (docs/STDIO.md): one JSON turn per line on
// stdin, one action per line on stdout. It reads the "legal_actions" list (written before
// the observation, sorted, "pass" last) and plays the legal card of the longest run on
// offer ("8D+9D" beats "8D"), else the first action.
#include <iostream>
#include <string>
#include <vector>

static std::vector<std::string> legal_actions(const std::string &line) {
    std::vector<std::string> out;
    const std::string key = "\"legal_actions\":[";
    std::size_t at = line.find(key);
    if (at == std::string::npos) return out;
    std::size_t p = at + key.size();
    while (p < line.size() && line[p] == '"') {
        std::size_t end = line.find('"', p + 1);
        if (end == std::string::npos) break;
        out.push_back(line.substr(p + 1, end - p - 1));
        p = end + 1;
        if (p < line.size() && line[p] == ',') ++p;
    }
    return out;
}

int main() {
    std::ios::sync_with_stdio(false);
    std::string line;
    while (std::getline(std::cin, line)) {
        if (line.rfind("{\"type\":\"turn\"", 0) != 0) continue;
        std::vector<std::string> legal = legal_actions(line);
        std::string best = legal.empty() ? "pass" : legal.front();
        std::size_t best_len = 0;
        for (const std::string &action : legal) {
            if (action == "pass") continue;
            std::size_t len = 1;
            for (char c : action) len += (c == '+');
            if (len > best_len) { best = action; best_len = len; }
        }
        std::cout << best << std::endl;
    }
    return 0;
}
