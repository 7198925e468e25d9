# Entry point on the board (the deploy stub imports it from the active folder).
import board
from mp_app import run_board

run_board(board)
